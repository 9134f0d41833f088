"""Engine adapters by kind: the explicit ``ADAPTERS`` registry and ``adapter_for(job)``.

``ADAPTERS`` maps a job's ``engine.framework`` to its adapter. To add an engine, write a
module with an ``EngineAdapter`` subclass (``engines/adapter.py``) and add one line here.
"""

from __future__ import annotations

from inferx_pipeline.engines.adapter import EngineAdapter
from inferx_pipeline.engines.atom import AtomAdapter
from inferx_pipeline.engines.sglang import SglangAdapter
from inferx_pipeline.engines.sim import SimAdapter
from inferx_pipeline.engines.trt import TrtAdapter
from inferx_pipeline.engines.vllm import VllmAdapter
from inferx_pipeline.errors import LaunchError
from inferx_pipeline.matrix.job import BenchmarkJob

__all__ = ["ADAPTERS", "EngineAdapter", "adapter_for"]

ADAPTERS: dict[str, EngineAdapter] = {
    "vllm": VllmAdapter(),
    "sglang": SglangAdapter(),
    "trt": TrtAdapter(),
    "atom": AtomAdapter(),
    "sim": SimAdapter(),
}


def adapter_for(job: BenchmarkJob) -> EngineAdapter:
    """The adapter for ``job.engine.framework``; LaunchError naming the known kinds."""
    try:
        return ADAPTERS[job.engine.framework]
    except KeyError as err:
        raise LaunchError(
            f"{job.job_id}: no engine adapter for framework {job.engine.framework!r}; "
            f"adapters: {', '.join(sorted(ADAPTERS))}"
        ) from err
