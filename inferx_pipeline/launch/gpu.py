"""The GPU access block a container needs, from the SKU's vendor (pure).

The block is docker-py ``containers.create`` keyword arguments, merged into the rest
of the container's arguments by the Docker launcher. It depends only on the
``GpuRequest`` (vendor from the catalog, count from the job), never on a recipe.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from docker.types import DeviceRequest

from inferx_pipeline.launch.spec import GpuRequest, GpuVendor

GpuBlock = dict[str, Any]


def _nvidia(count: int) -> GpuBlock:
    # The NVIDIA container runtime maps `count` GPUs; CUDA numbers them from 0 inside.
    return {
        "device_requests": [DeviceRequest(count=count, capabilities=[["gpu"]])],
        "environment": {"CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in range(count))},
    }


def _amd(count: int) -> GpuBlock:
    # ROCm needs the KFD compute device and the DRM render nodes, with the groups that
    # own them; ptrace and unconfined seccomp are what ROCm's own docs ask for.
    return {
        "devices": ["/dev/kfd:/dev/kfd:rwm", "/dev/dri:/dev/dri:rwm"],
        "group_add": ["video", "render"],
        "security_opt": ["seccomp=unconfined"],
        "cap_add": ["SYS_PTRACE"],
    }


def _none(count: int) -> GpuBlock:
    return {}


GPU_BLOCKS: dict[GpuVendor, Callable[[int], GpuBlock]] = {
    "nvidia": _nvidia,
    "amd": _amd,
    "none": _none,
}


def gpu_block(gpus: GpuRequest) -> GpuBlock:
    """docker-py arguments giving a container ``gpus.count`` GPUs of ``gpus.vendor``.

    ``environment`` (NVIDIA only) is a dict the launcher merges into the container's
    environment. Vendor ``none`` or a count of 0 gives an empty block.
    """
    if gpus.count == 0:
        return {}
    return GPU_BLOCKS[gpus.vendor](gpus.count)
