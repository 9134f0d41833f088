"""A multinode job as one allocation of N nodes: its workers, their wiring, and a router (pure).

Workers get whole nodes, as srt-slurm allocates them: a worker of ``tp x pp x pcp`` GPUs
takes ``ceil(gpus / gpus_per_node)`` consecutive nodes, prefill workers first, then
decode workers. An aggregated row (decode ``num-worker`` 0) has only ``aggregated``
workers. ``deployment`` turns the layout into what a launcher starts (``DeploymentSpec``):

- each worker's argv is its engine adapter's command at that worker's parallelism, plus
  the engine's own flags for its role (vLLM ``--kv-transfer-config`` with the recipe's
  connector, SGLang ``--disaggregation-mode``; the simulator ``--role``) and, for a
  worker spanning several nodes, the engine's multi-node flags (rank, node count, the
  first node as master);
- the router is a released one, pinned as a project dependency: ``vllm-router`` for vLLM
  engines (its ``--vllm-pd-disaggregation`` speaks vLLM's ``kv_transfer_params``),
  ``sglang-router`` for the others (SGLang's bootstrap handshake). A recipe naming
  another router (Dynamo's frontend) runs with the engine's router standing in on the
  simulator; a real engine refuses it, naming what would run.

Engines whose disaggregated launch is not written here (TensorRT-LLM, ATOM) run
multinode on the simulator only; their real deployment is a LaunchError that says so.
"""

from __future__ import annotations

import json
import math
import shlex
from functools import cache
from importlib.metadata import version

from pydantic import Field

from inferx_pipeline.catalog import Sku
from inferx_pipeline.engines.adapter import EngineAdapter
from inferx_pipeline.engines.base import ADAPTERS, adapter_for
from inferx_pipeline.errors import InferxError, LaunchError
from inferx_pipeline.images.changelog import FRAMEWORK_ENGINE
from inferx_pipeline.launch.spec import (
    DeploymentSpec,
    GpuRequest,
    RouterMode,
    RouterSpec,
    ServerSpec,
    WorkerRole,
    WorkerSpec,
)
from inferx_pipeline.matrix.job import BenchmarkJob, JobParallel
from inferx_pipeline.recipes.scenarios import Worker
from inferx_pipeline.strict import FrozenModel

# Released routers the launcher runs (both pinned in pyproject.toml): name -> module.
ROUTERS = {
    "sglang-router": "sglang_router.launch_router",
    "vllm-router": "vllm_router.launch_router",
}
# The recipe's kv-p2p-transfer -> vLLM's KV connector (vllm/distributed/kv_transfer/
# kv_connector/factory.py). shared-storage: ExampleConnector, the one that runs on CPU.
VLLM_CONNECTORS = {
    "nixl": "NixlConnector",
    "mooncake": "MooncakeConnector",
    "mori": "MoRIIOConnector",
    "lmcache": "LMCacheConnectorV1",
    "shared-storage": "ExampleConnector",
}
# Where the shared-storage connector keeps KV: a folder every node sees (the launcher
# fills it in, see launch/slurm_deploy.py).
SHARED_PLACEHOLDER = "{shared}"
# What a disaggregated recipe without kv-p2p-transfer moves KV with (InferenceX's default).
DEFAULT_TRANSFER = "nixl"


class WorkerPlacement(FrozenModel):
    """One worker replica: its role, the job's node indexes it spans, and its GPUs."""

    role: WorkerRole
    index: int = Field(ge=0, description="Replica number within its role.")
    nodes: tuple[int, ...] = Field(description="Node indexes (0-based) within the job.")
    gpus: int = Field(ge=1, description="GPUs of this worker (tp x pp x pcp).")


class JobLayout(FrozenModel):
    """The nodes of a multinode job and where each worker runs."""

    nodes: int = Field(ge=1, description="Nodes of the job (sbatch --nodes).")
    gpus_per_node: int
    workers: tuple[WorkerPlacement, ...]


def _pools(job: BenchmarkJob) -> list[tuple[WorkerRole, Worker]]:
    if job.workers is None:
        raise InferxError(f"{job.job_id}: a single-node job has no multinode layout")
    if job.workers.decode.num_worker == 0:
        return [("aggregated", job.workers.prefill)]
    return [("prefill", job.workers.prefill), ("decode", job.workers.decode)]


def disaggregated(job: BenchmarkJob) -> bool:
    """True when ``job`` runs prefill and decode workers apart (a decode pool of workers)."""
    return job.disagg and job.workers is not None and job.workers.decode.num_worker > 0


def layout(job: BenchmarkJob, sku: Sku) -> JobLayout:
    """The nodes of multinode ``job`` on ``sku``; InferxError for a single-node job."""
    placed: list[WorkerPlacement] = []
    next_node = 0
    for role, worker in _pools(job):
        span = math.ceil(worker.gpus_per_replica / sku.gpus_per_node)
        for index in range(worker.num_worker):
            nodes = tuple(range(next_node, next_node + span))
            next_node += span
            placed.append(
                WorkerPlacement(role=role, index=index, nodes=nodes, gpus=worker.gpus_per_replica)
            )
    return JobLayout(
        nodes=max(next_node, 1), gpus_per_node=sku.gpus_per_node, workers=tuple(placed)
    )


def worker_job(job: BenchmarkJob, worker: Worker) -> BenchmarkJob:
    """``job`` as the single-node job one worker of ``worker``'s pool serves."""
    # A single-node DP-attention layout counts its ranks in tp (tp 8, ep 8, dp-attn).
    parallel = JobParallel(
        tp=worker.attention_ranks, ep=worker.ep, dp_attn=worker.dp_attn, pp=worker.pp,
        dcp_size=worker.dcp_size, pcp_size=worker.pcp_size,
    )  # fmt: skip
    return job.evolve(
        multinode=False, disagg=False, parallel=parallel, workers=None, gpus=worker.gpus_per_replica
    )


def engine_of(job: BenchmarkJob) -> str:
    """The engine a job's workers run: ``dynamo-sglang`` and ``sglang-disagg`` run SGLang."""
    return FRAMEWORK_ENGINE.get(job.engine.framework, job.engine.framework)


def router_for(job: BenchmarkJob, *, simulated: bool) -> RouterSpec:
    """The released router in front of ``job``'s workers (see the module docstring)."""
    engine = engine_of(job)
    name = "vllm-router" if engine == "vllm" else "sglang-router"
    wanted = job.router.name if job.router is not None else None
    if wanted in ROUTERS:
        name = wanted
    elif wanted is not None and not simulated:
        raise LaunchError(
            f"{job.job_id}: router {wanted!r} is not one inferx launches ({', '.join(ROUTERS)}); "
            f"set the recipe's router to {name} or run it on the simulator (--sim)"
        )
    mode: RouterMode = "regular"
    if disaggregated(job):
        mode = "pd-vllm" if name == "vllm-router" else "pd-sglang"
    return RouterSpec(
        name=name,
        version=_installed(name),
        module=ROUTERS[name],
        mode=mode,
        recipe_router=wanted if wanted != name else None,
    )


@cache
def _installed(distribution: str) -> str:
    # A distribution's metadata scan costs ~0.2 ms; a full matrix asks once per job.
    return version(distribution)


def _vllm_role(role: WorkerRole, transfer: str | None, job: BenchmarkJob) -> list[str]:
    if role == "aggregated":
        return []
    connector = VLLM_CONNECTORS.get(transfer or DEFAULT_TRANSFER)
    if connector is None:
        raise LaunchError(
            f"{job.job_id}: kv-p2p-transfer {transfer!r} has no vLLM KV connector here; "
            f"set it to one of {', '.join(VLLM_CONNECTORS)}"
        )
    config: dict[str, object] = {"kv_connector": connector, "kv_role": "kv_both"}
    if connector == "ExampleConnector":
        config["kv_role"] = "kv_producer" if role == "prefill" else "kv_consumer"
        config["kv_connector_extra_config"] = {"shared_storage_path": SHARED_PLACEHOLDER}
    return ["--kv-transfer-config", json.dumps(config, sort_keys=True)]


def _sglang_role(role: WorkerRole, transfer: str | None, job: BenchmarkJob) -> list[str]:
    if role == "aggregated":
        return []
    argv = [
        "--disaggregation-mode",
        role,
        "--disaggregation-transfer-backend",
        transfer or DEFAULT_TRANSFER,
    ]
    return argv + (
        ["--disaggregation-bootstrap-port", "{bootstrap_port}"] if role == "prefill" else []
    )


def _sim_role(role: WorkerRole, transfer: str | None, job: BenchmarkJob) -> list[str]:
    argv = ["--role", role]
    return argv + (["--bootstrap-port", "{bootstrap_port}"] if role == "prefill" else [])


_ROLE_FLAGS = {"vllm": _vllm_role, "sglang": _sglang_role, "sim": _sim_role}


def _span_flags(kind: str, span: int) -> tuple[list[str], list[str]]:
    """The (leader, follower-only) multi-node flags of ``kind`` for a worker of ``span`` nodes."""
    if span == 1:
        return [], []
    if kind == "sglang":
        flags = ["--nnodes", "{nnodes}", "--node-rank", "{rank}"]
        return [*flags, "--dist-init-addr", "{master}:{master_port}"], []
    flags = ["--nnodes", "{nnodes}", "--node-rank", "{rank}"]
    flags += ["--master-addr", "{master}", "--master-port", "{master_port}"]
    if kind != "vllm":
        return flags, []
    # vLLM spans nodes with its multiprocessing executor (no Ray); ranks > 0 serve no API.
    return [*flags, "--distributed-executor-backend", "mp"], ["--headless"]


def deployment(job: BenchmarkJob, sku: Sku, adapter: EngineAdapter | None = None) -> ServerSpec:
    """The ServerSpec of multinode ``job`` on ``sku``: its workers, wiring and router.

    ``adapter`` runs every worker (the simulator's); None = the job's own engine. Raises
    LaunchError for what cannot launch (an engine without multinode wiring here, an
    unknown KV connector, a router inferx does not run).
    """
    kind = adapter.kind if adapter is not None else engine_of(job)
    adapter = adapter or ADAPTERS.get(kind)
    role_flags = _ROLE_FLAGS.get(kind)
    if adapter is None or role_flags is None:
        raise LaunchError(
            f"{job.job_id}: multinode {job.engine.framework} is not launched by inferx "
            f"(multinode engines: {', '.join(k for k in _ROLE_FLAGS if k != 'sim')}); "
            "run it on the simulator (--sim)"
        )
    plan = layout(job, sku)
    pools = dict(_pools(job))
    specs: dict[WorkerRole, ServerSpec] = {}
    workers: list[WorkerSpec] = []
    for placed in plan.workers:
        if placed.role not in specs:
            specs[placed.role] = adapter.server_spec(worker_job(job, pools[placed.role]), sku=sku)
        base = list(specs[placed.role].argv) + role_flags(placed.role, job.kv_p2p_transfer, job)
        leader, follower = _span_flags(kind, len(placed.nodes))
        workers.append(
            WorkerSpec(
                role=placed.role,
                index=placed.index,
                nodes=placed.nodes,
                gpus=placed.gpus if specs[placed.role].gpus.count else 0,
                argv=(*base, *leader),
                follower_argv=(*base, *leader, *follower) if follower else (),
            )
        )
    first = specs[plan.workers[0].role]
    per_node = min(first.gpus.count, sku.gpus_per_node)
    return first.model_copy(
        update={
            "name": f"{job.recipe_id}/{job.scenario_label}/{job.label}",
            "fingerprint": job.server_key,
            "argv": workers[0].argv,
            "gpus": GpuRequest(vendor=first.gpus.vendor, count=per_node),
            "deployment": DeploymentSpec(
                nodes=plan.nodes,
                workers=tuple(workers),
                router=router_for(job, simulated=kind == "sim"),
                transfer=(job.kv_p2p_transfer or DEFAULT_TRANSFER) if disaggregated(job) else None,
            ),
        }
    )


def _pool_label(worker: Worker) -> str:
    label = f"tp{worker.tp}"
    label += f" ep{worker.ep}" if worker.ep > 1 else ""
    label += f" pp{worker.pp}" if worker.pp > 1 else ""
    return label + (" dp-attn" if worker.dp_attn else "")


def deployment_fields(job: BenchmarkJob) -> dict[str, str | int | bool | None]:
    """A multinode job's deployment as result fields (``JobIdentity`` names); {} for a
    single-node job. tp/ep/pp/dp_attn are the decode pool's (the aggregated pool's)."""
    if job.workers is None:
        return {}
    pools = dict(_pools(job))
    main = pools.get("decode", pools.get("aggregated"))
    assert main is not None  # every multinode job has a decode or an aggregated pool
    if disaggregated(job):
        p, d = pools["prefill"], pools["decode"]
        label = f"disagg {p.num_worker}P {_pool_label(p)} + {d.num_worker}D {_pool_label(d)}"
    else:
        label = f"{main.num_worker}x {_pool_label(main)}"
    prefill = pools.get("prefill")
    return {
        "deployment": label,
        "deployment_gpus": job.gpus,
        "disagg": disaggregated(job),
        "prefill_workers": prefill.num_worker if prefill else 0,
        "prefill_tp": prefill.tp if prefill else None,
        "prefill_ep": prefill.ep if prefill else None,
        "decode_workers": main.num_worker,
        "decode_tp": main.tp,
        "decode_ep": main.ep,
        # The recipe's router; without one, the router inferx puts in front.
        "router": job.router.name if job.router else router_for(job, simulated=True).name,
        "kv_transfer": (job.kv_p2p_transfer or DEFAULT_TRANSFER) if disaggregated(job) else None,
        "tp": main.tp,
        "ep": main.ep,
        "pp": main.pp,
        "pcp": main.pcp_size,
        "dp_attn": main.dp_attn,
    }


def job_spec(job: BenchmarkJob, sku: Sku, adapter: EngineAdapter | None = None) -> ServerSpec:
    """Any job's ServerSpec: a multinode job's deployment, else its single server.

    ``adapter`` runs it (the simulator's); None = the job's own engine adapter.
    """
    if job.workers is not None:
        return deployment(job, sku, adapter)
    return (adapter or adapter_for(job)).server_spec(job, sku=sku)


def describe(job: BenchmarkJob, sku: Sku) -> list[str]:
    """The job's deployment as text lines: nodes, router and transfer, then one line per
    worker with its command (or, when it cannot launch, the layout and the reason)."""
    plan = layout(job, sku)
    try:
        spec = deployment(job, sku)
    except InferxError as err:
        lines = [f"slurm job: {plan.nodes} nodes x {plan.gpus_per_node} GPUs"]
        reason = str(err).split(": ", 1)[-1]
        for placed in plan.workers:
            nodes = ",".join(f"node{n}" for n in placed.nodes)
            lines.append(f"  {placed.role}[{placed.index}] {nodes} {placed.gpus} GPUs")
        return [*lines, f"  (not launched: {reason})"]
    assert spec.deployment is not None  # deployment() always sets it
    dep = spec.deployment
    router = f"{dep.router.name} {dep.router.version} ({dep.router.mode})"
    if dep.router.recipe_router:
        router += f", standing in for {dep.router.recipe_router}"
    lines = [f"slurm job: {plan.nodes} nodes x {plan.gpus_per_node} GPUs; router {router}"]
    if dep.transfer:
        lines[0] += f"; KV transfer {dep.transfer}"
    for worker in dep.workers:
        nodes = ",".join(f"node{n}" for n in worker.nodes)
        lines.append(f"  {worker.label} {nodes} {worker.gpus} GPUs: {shlex.join(worker.argv)}")
    return lines
