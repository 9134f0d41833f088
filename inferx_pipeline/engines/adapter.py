"""The engine-adapter interface: a ``BenchmarkJob`` -> the ``ServerSpec`` that serves it.

The registry (``ADAPTERS``, ``adapter_for``) is in ``engines/base.py``. Derived settings
are rules here, never copies in recipes: ``--max-model-len`` comes from the job,
max-num-seqs from the recipe's rule at the job's concurrency, CUDA-graph capture sizes
from ``up-to-max-num-seqs``. A server group (jobs sharing ``server_key``) is served by
the spec of its highest-concurrency job.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping

from inferx_pipeline.catalog import Sku
from inferx_pipeline.errors import LaunchError
from inferx_pipeline.launch.models import MODEL_PLACEHOLDER
from inferx_pipeline.launch.spec import ClientSettings, GpuRequest, ServerSpec
from inferx_pipeline.matrix.job import ArgValue, BenchmarkJob, JobParallel

PORT = "{port}"
# The launcher fills in where the checkpoint lies on its host (launch/models.py); the
# server keeps answering to the HF id through --served-model-name.
MODEL = MODEL_PLACEHOLDER


class EngineAdapter(ABC):
    """Turns one job into a ServerSpec for one engine kind."""

    kind: str
    health_path: str = "/health"
    # Large checkpoints load for many minutes; the deadline bounds a hung start.
    startup_timeout_s: float = 1800.0

    @abstractmethod
    def argv(self, job: BenchmarkJob, parallel: JobParallel) -> list[str]:
        """The server command line (``{port}`` and ``{model}`` placeholders)."""

    @abstractmethod
    def env(self, job: BenchmarkJob) -> dict[str, str]:
        """The server environment."""

    def server_spec(self, job: BenchmarkJob, *, sku: Sku) -> ServerSpec:
        """The ServerSpec of single-node ``job`` on ``sku``; LaunchError for a multinode job
        (its workers' specs come from ``engines/multinode.py``)."""
        if job.parallel is None:
            raise LaunchError(
                f"{job.job_id}: multinode jobs ({job.engine.framework}) have no single-node "
                "server; its deployment is engines.multinode.job_spec's"
            )
        return ServerSpec(
            name=f"{job.recipe_id}/{job.scenario_label}/{job.label}",
            fingerprint=job.server_key,
            image=job.engine.image,
            argv=tuple(self.argv(job, job.parallel)),
            env=self.env(job),
            gpus=GpuRequest(vendor=sku.vendor, count=job.gpus),
            port=0,
            health_path=self.health_path,
            startup_timeout_s=self.startup_timeout_s,
            client=ClientSettings(
                api=job.client.api,
                model_name=job.model.hf_id,
                chat_template_kwargs=dict(job.client.chat_template_kwargs),
            ),
        )


def render_args(args: Mapping[str, ArgValue] | tuple[str, ...]) -> list[str]:
    """Recipe server args as argv: true = bare flag, false/None = omitted, list = repeated."""
    if isinstance(args, tuple):
        return list(args)
    out: list[str] = []
    for flag, value in args.items():
        if value is None or value is False:
            continue
        if value is True:
            out.append(flag)
        elif isinstance(value, list):
            for item in value:
                out += [flag, str(item)]
        else:
            out += [flag, str(value)]
    return out


def capture_sizes(job: BenchmarkJob) -> tuple[int, ...] | None:
    """CUDA-graph capture sizes: the recipe's list, powers of two up to max-num-seqs, or None."""
    sizes = job.engine.cudagraph_capture_sizes
    if sizes != "up-to-max-num-seqs":
        return sizes
    if job.max_num_seqs is None:
        raise LaunchError(
            f"{job.job_id}: cudagraph-capture-sizes up-to-max-num-seqs needs a max-num-seqs rule"
        )
    powers = [1 << i for i in range(job.max_num_seqs.bit_length()) if 1 << i <= job.max_num_seqs]
    return tuple(dict.fromkeys([*powers, job.max_num_seqs]))
