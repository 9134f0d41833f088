"""This host's NVIDIA GPUs, read with ``nvidia-smi``, checked against what a local sweep needs.

A GPU workstation's host file says which SKUs it serves; before any engine starts, the
GPUs the driver reports must be that SKU (a name in the SKU's ``device_names``,
``catalog/skus.yaml``), so a sweep labelled H200 never measures another card. The check
and the parser are pure; only ``probe_nvidia`` runs a program. AMD hosts are not probed
(no AMD host to read ``amd-smi`` output from here): their GPUs come from the host file.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterable, Sequence

from pydantic import Field

from inferx_pipeline.catalog import Sku
from inferx_pipeline.errors import LaunchError
from inferx_pipeline.strict import FrozenModel

NVIDIA_QUERY = (
    "nvidia-smi",
    "--query-gpu=index,uuid,name,memory.total",
    "--format=csv,noheader,nounits",
)
PROBE_TIMEOUT_S = 30.0


class HostGpu(FrozenModel):
    """One GPU as the driver reports it."""

    index: int = Field(ge=0, description="The driver's index (what CUDA_VISIBLE_DEVICES names).")
    uuid: str
    name: str = Field(description="e.g. 'NVIDIA H200'.")
    memory_mib: int = Field(ge=0)


def parse_nvidia_smi(text: str) -> tuple[HostGpu, ...]:
    """The GPUs in ``nvidia-smi`` CSV output of ``NVIDIA_QUERY``; LaunchError naming the line."""
    gpus = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = [field.strip() for field in line.split(",")]
        if len(fields) != 4 or not fields[0].isdigit() or not fields[3].isdigit():
            raise LaunchError(
                f"nvidia-smi output line {number}: got {line!r}; expected "
                "'index, uuid, name, memory MiB' (is the NVIDIA driver working?)"
            )
        index, uuid, name, memory = fields
        gpus.append(HostGpu(index=int(index), uuid=uuid, name=name, memory_mib=int(memory)))
    return tuple(gpus)


Runner = Callable[..., "subprocess.CompletedProcess[str]"]


def probe_nvidia(run: Runner = subprocess.run) -> tuple[HostGpu, ...]:
    """The host's NVIDIA GPUs; LaunchError when ``nvidia-smi`` is missing or fails."""
    try:
        done = run(
            list(NVIDIA_QUERY), capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=True
        )
    except FileNotFoundError as err:
        raise LaunchError(
            "no nvidia-smi on this host: a local sweep of an NVIDIA SKU needs the NVIDIA "
            "driver here; run the sweep on the GPU host, or use --launcher docker/slurm"
        ) from err
    except (OSError, subprocess.SubprocessError) as err:
        detail = getattr(err, "stderr", "") or err
        raise LaunchError(f"nvidia-smi failed: {detail}; check the NVIDIA driver") from err
    return parse_nvidia_smi(done.stdout)


def usable(gpus: Sequence[HostGpu], allowed: Iterable[int] | None) -> tuple[HostGpu, ...]:
    """The GPUs engines may use: all, or those whose index the host file lists."""
    if allowed is None:
        return tuple(gpus)
    found = {gpu.index: gpu for gpu in gpus}
    wanted = tuple(allowed)
    absent = [i for i in wanted if i not in found]
    if absent:
        raise LaunchError(
            f"gpus: {', '.join(map(str, absent))} not on this host (nvidia-smi reports "
            f"{', '.join(str(g.index) for g in gpus) or 'none'}); fix gpus: in the host file"
        )
    return tuple(found[i] for i in wanted)


def check_sku(gpus: Sequence[HostGpu], sku: Sku, need: int) -> None:
    """LaunchError unless ``gpus`` are ``need`` or more GPUs, every one of them ``sku``."""
    if len(gpus) < need:
        raise LaunchError(
            f"{sku.id}: a job needs {need} GPUs; this host offers {len(gpus)} "
            f"({', '.join(f'{g.index}: {g.name}' for g in gpus) or 'none'}); select jobs "
            "of fewer GPUs or run them where there are more"
        )
    others = [g for g in gpus if g.name not in sku.device_names]
    if others:
        listed = ", ".join(repr(n) for n in sku.device_names) or "none"
        reported = ", ".join(f"GPU {g.index} {g.name!r}" for g in others)
        raise LaunchError(
            f"{sku.id}: nvidia-smi reports {reported}, not a {sku.id} (device_names in "
            f"catalog/skus.yaml: {listed}); add the name there "
            "if this card is that SKU, or list only its GPUs in the host file's gpus:"
        )


def visible_devices(gpus: Sequence[HostGpu], count: int) -> str:
    """``CUDA_VISIBLE_DEVICES`` for a server of ``count`` GPUs: the first ``count`` usable."""
    return ",".join(str(gpu.index) for gpu in gpus[:count])
