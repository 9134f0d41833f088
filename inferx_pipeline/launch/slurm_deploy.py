"""A multinode deployment as one Slurm job: one step per worker, and a router on the submit host.

::

    handle = SlurmLauncher(pool, log_dir=logs, run_id=run_id).start(spec)  # spec.deployment set
    handle.wait_healthy()      # every worker's /health, then the router's
    run_client(handle.base_url)                                            # the router

The batch script (``deployment_script``, pure) starts each worker with its own ``srun``
step on its nodes (``--relative``): rank 0 runs the worker's argv and serves HTTP, ranks
> 0 its follower argv; each line a worker prints is prefixed ``[role[i] rN]``. In argv,
``{port}`` is the worker's port (a block of four per worker, from the job id),
``{bootstrap_port}`` the next one (a prefill worker's KV handshake), ``{master_port}``
the one after, ``{master}`` the host name of the worker's first node, ``{rank}`` and
``{nnodes}`` the task's rank and the step's node count, ``{shared}`` a folder for this
job under the pool's shared log folder. Each rank exports its node's address as
``INFERX_NODE_ADDR``, and as ``VLLM_HOST_IP`` unless the recipe sets it. Each worker's
rank 0 prints
``INFERX_SLURM_REPLICA rank=<worker> node=N port=P``. The script waits for the first step
to end, prints ``INFERX_SLURM_WORKER_EXIT rank=<worker> status=S`` and ends the job, so
a worker that dies ends the deployment and the handle names it with its own log lines.

A simulated deployment (no GPUs) asks for at most the pool's ``nodes``: workers are
packed onto them round-robin and share nodes (``srun --overlap``); a real one asks for
every node its layout needs, and Slurm refuses what the partition cannot give.
"""

from __future__ import annotations

import contextlib
import shlex
import time
from pathlib import Path

from inferx_pipeline.errors import AllocationEndedError, LaunchError
from inferx_pipeline.launch.base import LOG_TAIL_LINES, ServerHandle, http_ok
from inferx_pipeline.launch.router import await_workers, start_router
from inferx_pipeline.launch.slurm_cli import SlurmCli
from inferx_pipeline.launch.slurm_handle import SlurmHandle
from inferx_pipeline.launch.slurm_log import JobOutput
from inferx_pipeline.launch.slurm_pools import SlurmPool
from inferx_pipeline.launch.slurm_script import EXIT_PREFIX, REPLICA_PREFIX, RUNTIMES, check_names
from inferx_pipeline.launch.spec import DeploymentSpec, ServerSpec, WorkerSpec
from inferx_pipeline.launch.subprocess import SubprocessLauncher

PORT_BASE = 20000
PORT_SPAN = 20000
PORTS_PER_WORKER = 4
FOLLOWERS = "--inferx-followers--"  # separates a worker's leader argv from its follower argv

_WORKER_FUNCTION = f"""\
inferx_worker() {{
  local slot=$1 label=$2; shift 2
  local port=$(( {PORT_BASE} + (SLURM_JOB_ID % SPAN) * STRIDE + {PORTS_PER_WORKER} * slot ))
  local master arg leader=() follower=() args=() seen=0
  master=$(scontrol show hostnames "$SLURM_STEP_NODELIST" | head -n 1)
  # The address a worker announces to its peers: its node's name as it resolves there
  # (vLLM's ranks and KV side channels bind VLLM_HOST_IP; a recipe's env may set it).
  INFERX_NODE_ADDR=$(getent hosts "$SLURMD_NODENAME" | awk '{{print $1; exit}}')
  export INFERX_NODE_ADDR VLLM_HOST_IP="${{VLLM_HOST_IP:-$INFERX_NODE_ADDR}}"
  for arg in "$@"; do
    if [ "$arg" = "{FOLLOWERS}" ]; then seen=1; continue; fi
    if [ "$seen" = 1 ]; then follower+=("$arg"); else leader+=("$arg"); fi
  done
  if [ "$SLURM_PROCID" != 0 ] && [ "${{#follower[@]}}" -gt 0 ]; then leader=("${{follower[@]}}"); fi
  for arg in "${{leader[@]}}"; do
    arg="${{arg//'{{port}}'/$port}}"
    arg="${{arg//'{{bootstrap_port}}'/$((port + 1))}}"
    arg="${{arg//'{{master_port}}'/$((port + 2))}}"
    arg="${{arg//'{{master}}'/$master}}"
    arg="${{arg//'{{rank}}'/$SLURM_PROCID}}"
    arg="${{arg//'{{nnodes}}'/$SLURM_STEP_NUM_NODES}}"
    arg="${{arg//'{{job}}'/$SLURM_JOB_ID}}"
    args+=("${{arg//'{{shared}}'/$INFERX_SHARED/kv-$SLURM_JOB_ID}}")
  done
  if [ "$SLURM_PROCID" = 0 ]; then
    echo "{REPLICA_PREFIX} rank=$slot node=$SLURMD_NODENAME port=$port"
  fi
  set -o pipefail
  "${{args[@]}}" 2>&1 | sed -u "s/^/[$label r$SLURM_PROCID] /"
  exit "${{PIPESTATUS[0]}}"
}}
export -f inferx_worker
"""
# The first step to end ends the deployment: report it, stop the others (srun passes
# SIGTERM to its tasks), and exit with its status (a worker that exits 0 still died).
_WAIT = f"""\
wait -n -p ended
status=$?
echo "{EXIT_PREFIX} rank=${{slots[$ended]}} status=$status"
kill $(jobs -p) 2>/dev/null
wait
exit $(( status == 0 ? 1 : status ))
"""


def placement(dep: DeploymentSpec, capacity: int, *, simulated: bool) -> list[tuple[int, int]]:
    """Each worker's (first node, node count) in the allocation (pure).

    A real deployment keeps its layout. A simulated one larger than ``capacity`` nodes
    is packed: worker nodes wrap round-robin and a worker spans at most ``capacity``.
    """
    if not simulated or dep.nodes <= capacity:
        return [(w.nodes[0], len(w.nodes)) for w in dep.workers]
    places = []
    for worker in dep.workers:
        count = min(len(worker.nodes), capacity)
        places.append((min(worker.nodes[0] % capacity, capacity - count), count))
    return places


def allocation_nodes(dep: DeploymentSpec, capacity: int, *, simulated: bool) -> int:
    """Nodes the job asks for: the layout's, or at most ``capacity`` when simulated."""
    return dep.nodes if not simulated else min(dep.nodes, capacity)


def _step(
    spec: ServerSpec, worker: WorkerSpec, slot: int, where: tuple[int, int], pool: SlurmPool,
    run_id: str, *, overlap: bool,
) -> list[str]:  # fmt: skip
    start, count = where
    leader_options, leader = RUNTIMES[pool.runtime](
        spec.model_copy(update={"argv": worker.argv}), pool, run_id
    )
    followers: list[str] = []
    if worker.follower_argv:
        _, followers = RUNTIMES[pool.runtime](
            spec.model_copy(update={"argv": worker.follower_argv}), pool, run_id
        )
        followers = [FOLLOWERS, *followers]
    srun = ["srun", f"--nodes={count}", f"--ntasks={count}", "--ntasks-per-node=1"]
    srun += [f"--relative={start}", "--kill-on-bad-exit=1", "--export=ALL"]
    srun += (["--overlap"] if overlap else []) + leader_options
    command = ["bash", "-c", 'inferx_worker "$@"', "inferx_worker", str(slot), worker.label]
    return [*srun, *command, *leader, *followers]


def deployment_script(
    spec: ServerSpec, pool: SlurmPool, *, run_id: str, shared: Path, simulated: bool
) -> str:
    """The batch script of ``spec``'s deployment on ``pool`` (argv already resolved) (pure).

    Raises LaunchError for a runtime that cannot run several workers in one job (docker:
    its containers are named per job) and for an environment name that is not a POSIX name.
    """
    dep = spec.deployment
    assert dep is not None
    if pool.runtime == "docker":
        raise LaunchError(
            f"server {spec.name}: the Slurm pool's runtime docker starts one container per "
            "job; multinode deployments run with runtime none, pyxis or apptainer"
        )
    check_names(spec, [*spec.env, *spec.secret_env])
    stride = PORTS_PER_WORKER * len(dep.workers)
    places = placement(dep, pool.nodes, simulated=simulated)
    overlap = simulated and dep.nodes > pool.nodes
    lines = [
        "#!/bin/bash",
        f"# inferx deployment {shlex.quote(spec.name)}: {len(dep.workers)} workers, "
        f"router {dep.router.name}, runtime {pool.runtime}",
        "set -u",
        _WORKER_FUNCTION.replace("SPAN", str(PORT_SPAN // stride)).replace("STRIDE", str(stride)),
    ]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in sorted(spec.env.items())]
    lines += [f"export INFERX_SHARED={shlex.quote(str(shared))}", "declare -A slots"]
    for slot, (worker, where) in enumerate(zip(dep.workers, places, strict=True)):
        step = _step(spec, worker, slot, where, pool, run_id, overlap=overlap)
        lines += [shlex.join(step) + " &", f"slots[$!]={slot}"]
    return "\n".join(lines) + "\n" + _WAIT


class DeploymentHandle(SlurmHandle):
    """The Slurm job of a deployment plus its router; ``base_url`` is the router's.

    ``wait_healthy`` waits for every worker's health, then starts the router and waits
    for its own. A worker that ends the job is named (role, index, node) with its lines.
    """

    def __init__(
        self,
        spec: ServerSpec,
        *,
        cli: SlurmCli,
        job_id: int,
        output: JobOutput,
        poll_s: float,
        router_logs: Path,
    ) -> None:
        assert spec.deployment is not None
        workers = len(spec.deployment.workers)
        super().__init__(
            spec, cli=cli, job_id=job_id, output=output, replicas=workers, poll_s=poll_s
        )
        self.deployment: DeploymentSpec = spec.deployment
        self.router_logs = router_logs
        self.router: ServerHandle | None = None

    def _set_endpoints(self) -> None:
        placed = sorted(self.output.replicas.items())
        nodes = ",".join(node for _, (node, _) in placed)
        addresses = self.cli.node_addresses(nodes)
        self.endpoints = tuple(f"http://{addresses[node]}:{port}" for _, (node, port) in placed)

    @property
    def provenance(self) -> dict[str, str]:
        """The Slurm job's, plus each worker's URL (``decode[0]=http://...``) and the router
        that ran (``router_ran``: name and version)."""
        workers = " ".join(
            f"{w.label}={url}"
            for w, url in zip(self.deployment.workers, self.endpoints, strict=False)
        )
        router = self.deployment.router
        return {
            **super().provenance,
            "workers": workers,
            "router_ran": f"{router.name} {router.version}",
        }

    def wait_healthy(self, timeout_s: float | None = None) -> None:
        budget = self.spec.startup_timeout_s if timeout_s is None else timeout_s
        deadline = self.started_at + budget
        pairs = list(zip(self.deployment.workers, self.endpoints, strict=True))
        logs = f"the log {self.log_path}"
        await_workers(self, pairs, deadline=deadline, logs=logs, pause=self._pause)
        self.router = start_router(self.spec, pairs, SubprocessLauncher(self.router_logs).start)
        self.base_url = self.router.base_url
        super().wait_healthy(max(1.0, deadline - time.monotonic()))

    def _pause(self) -> None:
        if self.output.seen.wait(self.poll_s):  # a worker's exit line ends it early
            self.output.seen.clear()

    def exit_status(self) -> int | None:
        if self.router is not None and (status := self.router.exit_status()) is not None:
            return status
        return super().exit_status()

    def _answers(self) -> bool:
        return super()._answers() and (self.router is None or http_ok(self.base_url + "/health"))

    def exited_error(self, status: int) -> AllocationEndedError:
        router = self.router
        if router is not None and router.exit_status() is not None:
            tail = "\n  ".join(router.logs(10)) or "(no output)"
            return AllocationEndedError(
                f"server {self.spec.name}: router {self.deployment.router.name} exited with "
                f"status {status}; last log lines:\n  {tail}\n(full log: {router.log_path})",
                state="RUNNING",
                status=status,
                log_tail=router.logs(LOG_TAIL_LINES),
            )
        error = super().exited_error(status)
        ended = next(iter(self.output.exits.items()), None)
        if ended is None:
            return error
        slot, code = ended
        worker = self.deployment.workers[slot]
        node = self.output.replicas.get(slot, ("?", 0))[0]
        lines = self._worker_lines(worker)
        last = "\n  ".join(lines[-10:]) or "(no output)"
        return AllocationEndedError(
            f"server {self.spec.name}: {worker.label} worker on {node} exited with status "
            f"{code}, which ended Slurm job {self.job_id}; its last log lines:\n  {last}\n"
            f"(full log: {self.log_path})",
            state=error.state,
            status=code,
            oom_killed=code == 137 and error.oom_killed,
            log_tail=tuple(lines[-LOG_TAIL_LINES:]),
        )

    def _worker_lines(self, worker: WorkerSpec) -> list[str]:
        prefix = f"[{worker.label} r"
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = "\n".join(self.logs())
        return [line for line in text.splitlines() if prefix in line]

    def stop(self) -> None:
        """Stop the router, then cancel the job (``SlurmHandle.stop``)."""
        if self.router is not None:
            with contextlib.suppress(LaunchError):
                self.router.stop()
        super().stop()
