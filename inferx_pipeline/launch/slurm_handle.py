"""The handle of one server group's Slurm batch job: its state, endpoints, health and end.

``SlurmLauncher`` (``slurm.py``) submits the job and returns this handle once every
replica printed its node and port; ``DeploymentHandle`` (``slurm_deploy.py``) extends it
for a multinode deployment. ``stop()`` cancels the job and keeps its log.
"""

from __future__ import annotations

import contextlib
import time

from inferx_pipeline.errors import AllocationEndedError, LaunchError, ServerStartTimeoutError
from inferx_pipeline.launch.base import LOG_TAIL_LINES, ServerHandle, http_ok
from inferx_pipeline.launch.slurm_cli import SlurmCli, SlurmJob
from inferx_pipeline.launch.slurm_log import JobOutput
from inferx_pipeline.launch.slurm_proxy import RoundRobinProxy
from inferx_pipeline.launch.spec import ServerSpec

# How long an allocation whose server stopped answering may take to reach its end state
# (NODE_FAIL comes SlurmdTimeout plus a ping interval after a node dies).
END_STATE_WAIT_S = 120.0
# Exit statuses of ended jobs, shell style, for the states that have no exit code of their own.
STATE_EXIT = {"TIMEOUT": 124, "OUT_OF_MEMORY": 137, "CANCELLED": 143, "NODE_FAIL": 255}
# Job states before the job runs: the queue's clock, not the engine's.
QUEUED_STATES = frozenset({"PENDING", "CONFIGURING"})


class SlurmHandle(ServerHandle):
    """One batch job serving one spec; ``stop()`` cancels it and keeps its log."""

    def __init__(
        self,
        spec: ServerSpec,
        *,
        cli: SlurmCli,
        job_id: int,
        output: JobOutput,
        replicas: int,
        poll_s: float,
        address: str | None = None,
        cleanup: str | None = None,
    ) -> None:
        super().__init__(spec, "", output.log)
        self.cli = cli
        self.job_id = job_id
        self.output = output
        self.replicas = replicas
        self.poll_s = poll_s
        # Where every replica listens when not at its node's NodeAddr (one shared dockerd).
        self.address = address
        # Shell run on each node before scancel: removes what the job started outside Slurm.
        self.cleanup = cleanup
        self.proxy: RoundRobinProxy | None = None
        self.endpoints: tuple[str, ...] = ()
        self._job: SlurmJob | None = None
        self._polled_at = 0.0
        self._serving = False
        self._stopped = False

    @property
    def provenance(self) -> dict[str, str]:
        """The Slurm job id, its cluster and nodes, recorded with every point of this server."""
        job = self._job
        return {
            "slurm_job_id": str(self.job_id),
            "slurm_cluster": (job.cluster if job else "") or self.cli.cluster or "",
            "slurm_nodes": job.nodes if job else "",
        }

    def job(self, *, fresh: bool = False) -> SlurmJob | None:
        """The job as Slurm last reported it (asked again after ``poll_s``, or when ``fresh``)."""
        if fresh or time.monotonic() - self._polled_at >= self.poll_s:
            self._job = self.cli.job(self.job_id)
            self._polled_at = time.monotonic()
        return self._job

    def end_state(self) -> str | None:
        """None while the job is pending or running, else its state (UNKNOWN when forgotten)."""
        job = self.job()
        if job is None:
            return "UNKNOWN"
        return None if job.active else job.job_state

    def exit_status(self) -> int | None:
        state = self.end_state()
        if state is None and self._serving and not self._answers():
            state = self._await_end()
        if state is None:
            return None
        code = self._job.exit_code if self._job else None
        return STATE_EXIT.get(state) or code or (0 if state == "COMPLETED" else 1)

    def _answers(self) -> bool:
        return all(http_ok(url + self.spec.health_path) for url in self.endpoints)

    def _await_end(self) -> str | None:
        # The server stopped answering inside a running job: a dead node or a dying step.
        # Slurm decides within SlurmdTimeout; until then the job's state is not the truth.
        deadline = time.monotonic() + END_STATE_WAIT_S
        while time.monotonic() < deadline:
            state = self.end_state()
            if state is not None or self._answers():
                return state
            time.sleep(self.poll_s)  # polling squeue, bounded by the deadline
        return None

    def exited_error(self, status: int) -> AllocationEndedError:
        state = self.end_state() or "RUNNING"
        job = self._job
        where = f" on {job.nodes}" if job and job.nodes else ""
        reason = f" ({job.state_reason})" if job and job.state_reason not in ("", "None") else ""
        last = "\n  ".join(self.logs(LOG_TAIL_LINES)[-10:]) or "(no output)"
        return AllocationEndedError(
            f"server {self.spec.name}: Slurm job {self.job_id}{where} ended {state}{reason}; "
            f"last log lines:\n  {last}\n(full log: {self.log_path})",
            state=state,
            status=status,
            oom_killed=state == "OUT_OF_MEMORY",
            log_tail=self.logs(LOG_TAIL_LINES),
        )

    def wait_healthy(self, timeout_s: float | None = None) -> None:
        super().wait_healthy(timeout_s)
        self._serving = True

    def await_endpoints(self, queue_timeout_s: float) -> None:
        """Block until the job runs and every replica printed its node and port; set ``base_url``.

        The job may wait ``queue_timeout_s`` s in the queue; ``spec.startup_timeout_s``
        counts from when it is seen running (``started_at``, which ``wait_healthy`` counts
        from too). Raises AllocationEndedError when the job ends first (e.g. a script
        error) and ServerStartTimeoutError when either deadline passes (naming the job's
        state and pending reason).
        """
        queued_until = time.monotonic() + queue_timeout_s
        running = False
        while len(self.output.replicas) < self.replicas:
            self.raise_if_exited()
            if not running and (self.output.replicas or self._running()):
                running, self.started_at = True, time.monotonic()
            if not running and time.monotonic() >= queued_until:
                raise self._start_timeout(
                    f"still queued after {queue_timeout_s:g} s; raise queue_timeout_s of its "
                    "Slurm pool or check the partition"
                )
            budget = self.spec.startup_timeout_s
            if running and time.monotonic() >= self.started_at + budget:
                raise self._start_timeout(
                    f"{len(self.output.replicas)} of {self.replicas} replicas started "
                    f"{budget:g} s after the job began to run; raise startup_timeout_s"
                )
            if self.output.seen.wait(self.poll_s):
                self.output.seen.clear()
        self._set_endpoints()

    def _running(self) -> bool:
        job = self._job  # as raise_if_exited just polled it
        return job is not None and job.job_state not in QUEUED_STATES

    def _start_timeout(self, what: str) -> ServerStartTimeoutError:
        job = self._job
        state = f"{job.job_state} ({job.state_reason})" if job else "unknown"
        return ServerStartTimeoutError(
            f"server {self.spec.name}: Slurm job {self.job_id} {state}: {what}",
            log_tail=self.logs(LOG_TAIL_LINES),
        )

    def _set_endpoints(self) -> None:
        placed = sorted(self.output.replicas.items())
        nodes = ",".join(node for _, (node, _) in placed)
        addresses = self.cli.node_addresses(nodes) if self.address is None else {}
        self.endpoints = tuple(
            f"http://{self.address or addresses[node]}:{port}" for _, (node, port) in placed
        )
        if len(self.endpoints) == 1:
            self.base_url = self.endpoints[0]
        else:
            self.proxy = RoundRobinProxy(self.endpoints)
            self.base_url = self.proxy.start()

    def stop(self) -> None:
        """Cancel the job (if still active), wait briefly for it to end, keep its log."""
        if self._stopped:
            return
        self._stopped = True
        try:
            try:
                active = self.end_state() is None
            except LaunchError:  # squeue did not answer: cancel anyway, it is idempotent
                active = True
            if active and self.cleanup is not None:
                # The job's own trap may be SIGKILLed before it is done; this step is not.
                with contextlib.suppress(LaunchError):
                    self.cli.run_in_job(self.job_id, self.replicas, self.cleanup)
            if active:
                self.cli.cancel(self.job_id)
                self._wait_inactive()
        finally:
            if self.proxy is not None:
                self.proxy.stop()
            self.output.close()

    def _wait_inactive(self, grace_s: float = 30.0) -> None:
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            with contextlib.suppress(LaunchError):
                job = self.job(fresh=True)
                if job is None or not job.active:
                    return
            time.sleep(self.poll_s)  # polling squeue until the job left, bounded
