"""A multinode job as one Slurm job of N nodes: each worker's nodes, role and argv (pure).

Workers get whole nodes, as srt-slurm allocates them: a worker of ``tp x pp x pcp`` GPUs
takes ``ceil(gpus / gpus_per_node)`` consecutive nodes, prefill workers first, then
decode workers. An aggregated row (decode ``num-worker`` 0) has only ``aggregated``
workers. Each worker's argv is its engine adapter's command at that worker's
parallelism; the disaggregation wiring between workers (KV transfer, router) is not
generated, because running disaggregated engines is not supported yet: a layout is for
reading (``inferx matrix``) and sizing the allocation, not for launching.
"""

from __future__ import annotations

import math
import shlex
from typing import Literal

from pydantic import Field

from inferx_pipeline.catalog import Sku
from inferx_pipeline.engines.base import adapter_for
from inferx_pipeline.errors import InferxError
from inferx_pipeline.matrix.job import BenchmarkJob, JobParallel
from inferx_pipeline.recipes.scenarios import Worker
from inferx_pipeline.strict import FrozenModel

Role = Literal["prefill", "decode", "aggregated"]


class WorkerPlacement(FrozenModel):
    """One worker replica: its role, the job's node indexes it spans, and what it runs."""

    role: Role
    index: int = Field(ge=0, description="Replica number within its role.")
    nodes: tuple[int, ...] = Field(description="Node indexes (0-based) within the job.")
    gpus: int = Field(ge=1, description="GPUs of this worker (tp x pp x pcp).")
    argv: tuple[str, ...] = Field(default=(), description="Engine command; () when none.")
    note: str = Field(default="", description="Why there is no argv.")


class JobLayout(FrozenModel):
    """The whole Slurm job of a multinode matrix job."""

    nodes: int = Field(ge=1, description="Nodes of the job (sbatch --nodes).")
    gpus_per_node: int
    workers: tuple[WorkerPlacement, ...]


def _worker_gpus(worker: Worker) -> int:
    return worker.tp * worker.pp * worker.pcp_size


def _single_node(job: BenchmarkJob, worker: Worker) -> BenchmarkJob:
    parallel = JobParallel(
        tp=worker.tp, ep=worker.ep, dp_attn=worker.dp_attn, pp=worker.pp,
        dcp_size=worker.dcp_size, pcp_size=worker.pcp_size,
    )  # fmt: skip
    return job.evolve(
        multinode=False, disagg=False, parallel=parallel, workers=None, gpus=_worker_gpus(worker)
    )


def _command(job: BenchmarkJob, worker: Worker, sku: Sku) -> tuple[tuple[str, ...], str]:
    single = _single_node(job, worker)
    try:
        return adapter_for(single).server_spec(single, sku=sku).argv, ""
    except InferxError as err:
        return (), str(err).split(": ", 1)[-1]


def layout(job: BenchmarkJob, sku: Sku) -> JobLayout:
    """The Slurm job of multinode ``job`` on ``sku``'s nodes; InferxError for a single-node job."""
    if job.workers is None:
        raise InferxError(f"{job.job_id}: a single-node job has no multinode layout")
    aggregated = job.workers.decode.num_worker == 0
    pools: list[tuple[Role, Worker]] = (
        [("aggregated", job.workers.prefill)]
        if aggregated
        else [("prefill", job.workers.prefill), ("decode", job.workers.decode)]
    )
    placed: list[WorkerPlacement] = []
    next_node = 0
    for role, worker in pools:
        argv, note = _command(job, worker, sku)
        span = math.ceil(_worker_gpus(worker) / sku.gpus_per_node)
        for index in range(worker.num_worker):
            nodes = tuple(range(next_node, next_node + span))
            next_node += span
            placed.append(
                WorkerPlacement(
                    role=role,
                    index=index,
                    nodes=nodes,
                    gpus=_worker_gpus(worker),
                    argv=argv,
                    note=note,
                )
            )
    return JobLayout(
        nodes=max(next_node, 1), gpus_per_node=sku.gpus_per_node, workers=tuple(placed)
    )


def describe(plan: JobLayout) -> list[str]:
    """The layout as text lines: the job's size, then one line per worker."""
    lines = [f"slurm job: {plan.nodes} nodes x {plan.gpus_per_node} GPUs"]
    for worker in plan.workers:
        nodes = ",".join(f"node{n}" for n in worker.nodes)
        command = shlex.join(worker.argv) if worker.argv else f"({worker.note})"
        lines.append(f"  {worker.role}[{worker.index}] {nodes} {worker.gpus} GPUs: {command}")
    return lines
