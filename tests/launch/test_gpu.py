"""GPU access blocks per vendor, asserted on the docker-py arguments (no GPU exists here)."""

from __future__ import annotations

from docker.types import DeviceRequest

from inferx_pipeline.catalog import load_catalog
from inferx_pipeline.launch.gpu import gpu_block
from inferx_pipeline.launch.spec import GpuRequest
from inferx_pipeline.settings import Settings


def _vendor(sku: str) -> str:
    return load_catalog(Settings().catalog_dir).skus[sku].vendor


def test_nvidia_sku_gets_device_requests_and_visible_devices() -> None:
    block = gpu_block(GpuRequest(vendor=_vendor("h200"), count=4))
    assert block == {
        "device_requests": [DeviceRequest(count=4, capabilities=[["gpu"]])],
        "environment": {"CUDA_VISIBLE_DEVICES": "0,1,2,3"},
    }


def test_amd_sku_gets_kfd_dri_groups_seccomp_and_ptrace() -> None:
    block = gpu_block(GpuRequest(vendor=_vendor("mi355x"), count=8))
    assert block == {
        "devices": ["/dev/kfd:/dev/kfd:rwm", "/dev/dri:/dev/dri:rwm"],
        "group_add": ["video", "render"],
        "security_opt": ["seccomp=unconfined"],
        "cap_add": ["SYS_PTRACE"],
    }


def test_no_gpus_gives_an_empty_block() -> None:
    assert gpu_block(GpuRequest(vendor="none", count=0)) == {}
    assert gpu_block(GpuRequest(vendor="nvidia", count=0)) == {}
