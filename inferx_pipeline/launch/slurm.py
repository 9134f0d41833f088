"""Runs a ServerSpec as one Slurm batch job per server group, behind the launcher interface.

::

    launcher = SlurmLauncher(pool, cli=SlurmCli(os.environ), log_dir=logs, run_id=run_id)
    launcher.cleanup_orphans()                  # jobs of crashed launchers on this host
    with launcher.start(spec) as server:        # sbatch; returns once every replica printed
        server.wait_healthy()                   # its node and port (scancel on any failure)
        run_client(server.base_url)

The job's output file (``slurm_job-<id>.out``, on a folder the nodes share with the
submit host) is streamed into the server log while the job runs. Each job carries the
launcher's identity in its comment (``inferx run=<run> host=<host> pid=<pid>``), so a
restart finds the jobs of a launcher that died without ``scancel`` and cancels them.

Under Slurm an engine must listen on its node's address, so ``--host``'s value in the
argv becomes ``0.0.0.0``. With ``pool.replicas > 1`` the job runs one replica per node
and the handle's URL is a local round-robin proxy over them (``slurm_proxy``).
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import time
from collections.abc import Mapping
from pathlib import Path

from inferx_pipeline.errors import AllocationEndedError, LaunchError, ServerStartTimeoutError
from inferx_pipeline.launch.base import (
    LOG_TAIL_LINES,
    LogBuffer,
    ServerHandle,
    cleanup_on_failure,
    http_ok,
    log_file,
)
from inferx_pipeline.launch.models import MODEL_PLACEHOLDER, fill_model
from inferx_pipeline.launch.secrets import engine_env
from inferx_pipeline.launch.slurm_cli import SlurmCli, SlurmJob
from inferx_pipeline.launch.slurm_log import JobOutput
from inferx_pipeline.launch.slurm_pools import SlurmPool
from inferx_pipeline.launch.slurm_proxy import RoundRobinProxy
from inferx_pipeline.launch.slurm_script import batch_script, docker_cleanup, sbatch_options
from inferx_pipeline.launch.spec import ServerSpec

COMMENT_PREFIX = "inferx"
OUTPUT_NAME = "slurm_job-%j.out"
# How long an allocation whose server stopped answering may take to reach its end state
# (NODE_FAIL comes SlurmdTimeout plus a ping interval after a node dies).
END_STATE_WAIT_S = 120.0
# Exit statuses of ended jobs, shell style, for the states that have no exit code of their own.
STATE_EXIT = {"TIMEOUT": 124, "OUT_OF_MEMORY": 137, "CANCELLED": 143, "NODE_FAIL": 255}


def owner_comment(run_id: str) -> str:
    """This launcher's identity for a job's ``--comment``: run, host and PID."""
    return f"{COMMENT_PREFIX} run={run_id} host={socket.gethostname()} pid={os.getpid()}"


def parse_comment(comment: str) -> dict[str, str]:
    """The key=value fields of an ``owner_comment`` ({} for a job that is not ours)."""
    words = comment.split()
    if not words or words[0] != COMMENT_PREFIX:
        return {}
    return dict(word.split("=", 1) for word in words[1:] if "=" in word)


def listen_on_all(argv: tuple[str, ...]) -> tuple[str, ...]:
    """``argv`` with the value of ``--host`` set to ``0.0.0.0`` (pure)."""
    out = list(argv)
    for index, arg in enumerate(out[:-1]):
        if arg == "--host":
            out[index + 1] = "0.0.0.0"
    return tuple(re.sub(r"^--host=.*", "--host=0.0.0.0", arg) for arg in out)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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

    def await_endpoints(self, timeout_s: float) -> None:
        """Block until every replica printed its node and port; set ``base_url``.

        Raises AllocationEndedError when the job ends first (e.g. a script error) and
        ServerStartTimeoutError after ``timeout_s`` (a job still pending names its reason).
        """
        deadline = time.monotonic() + timeout_s
        while len(self.output.replicas) < self.replicas:
            self.raise_if_exited()
            if time.monotonic() >= deadline:
                job = self._job
                raise ServerStartTimeoutError(
                    f"server {self.spec.name}: Slurm job {self.job_id} "
                    f"{job.job_state + ' (' + job.state_reason + ')' if job else 'unknown'}: "
                    f"{len(self.output.replicas)} of {self.replicas} replicas started after "
                    f"{timeout_s:g} s; raise startup_timeout_s or check the partition",
                    log_tail=self.logs(LOG_TAIL_LINES),
                )
            if self.output.seen.wait(self.poll_s):
                self.output.seen.clear()
        self._set_endpoints()

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
                self.cli.cancel([self.job_id])
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


class SlurmLauncher:
    """Starts each spec as a batch job on ``pool``; see the module docstring.

    ``environ`` (default: this process's) is what Slurm commands run with (``SLURM_CONF``);
    the job takes from it only the host basics and the secrets named in
    ``pool.secret_env`` and each spec (``secrets.engine_env``).
    """

    def __init__(
        self,
        pool: SlurmPool,
        *,
        log_dir: Path,
        run_id: str,
        cli: SlurmCli | None = None,
        environ: Mapping[str, str] | None = None,
        poll_s: float = 0.5,
    ) -> None:
        self.pool = pool
        self.log_dir = log_dir
        self.run_id = run_id
        env = dict(os.environ if environ is None else environ)
        self.cli = cli or SlurmCli(env, cluster=pool.cluster)
        self.poll_s = poll_s

    def resolve(self, spec: ServerSpec) -> ServerSpec:
        """``spec`` as it runs on the pool: program, model path, listen address, store env."""
        argv = listen_on_all(spec.argv)
        if self.pool.runtime == "none" and argv[0] in self.pool.programs:
            argv = (self.pool.programs[argv[0]], *argv[1:])
        if any(MODEL_PLACEHOLDER in arg for arg in argv):
            argv = fill_model(argv, self.pool.model_store.location(spec.client.model_name))
        env = {**self.pool.model_store.env(), **spec.env}
        secrets = tuple(dict.fromkeys(spec.secret_env + self.pool.secret_env))
        return spec.model_copy(update={"argv": argv, "env": env, "secret_env": secrets})

    def start(self, spec: ServerSpec) -> SlurmHandle:
        """Submit ``spec``'s job; return once every replica runs and its URL is known.

        Raises LaunchError (sbatch refused), AllocationEndedError (the job ended first)
        or ServerStartTimeoutError; on any failure the job is already cancelled.
        """
        resolved = self.resolve(spec)
        shared = self.pool.log_dir or self.log_dir
        shared.mkdir(parents=True, exist_ok=True)
        options = sbatch_options(
            resolved,
            self.pool,
            name=f"inferx-{resolved.name}"[:128],
            comment=owner_comment(self.run_id),
            output=shared / OUTPUT_NAME,
            export=sorted(set(engine_env(resolved, self.cli.environ)) & set(self.cli.environ)),
        )
        job_id = self.cli.submit(batch_script(resolved, self.pool, run_id=self.run_id), options)
        output = JobOutput(
            shared / OUTPUT_NAME.replace("%j", str(job_id)),
            LogBuffer(log_file(self.log_dir, resolved)),
        )
        handle = SlurmHandle(
            resolved,
            cli=self.cli,
            job_id=job_id,
            output=output,
            replicas=self.pool.replicas,
            poll_s=self.poll_s,
            **self._docker_handling(job_id),
        )
        with cleanup_on_failure(handle):
            handle.await_endpoints(resolved.startup_timeout_s)
        return handle

    def _docker_handling(self, job_id: int) -> dict[str, str | None]:
        """The handle's ``address`` and ``cleanup`` under the docker runtime (none otherwise)."""
        if self.pool.runtime != "docker":
            return {}
        return {
            "address": self.pool.docker.daemon_address,
            "cleanup": docker_cleanup(str(job_id), self.pool),
        }

    def cleanup_orphans(self) -> list[int]:
        """Cancel the active jobs of launchers on this host that no longer run; their ids.

        A job is an orphan when its comment names this host and a PID that is gone (the
        launcher was killed before it could ``scancel``). Jobs of live launchers, of other
        hosts and of no launcher are never touched.
        """
        host = socket.gethostname()
        orphans = []
        for job in self.cli.active_jobs():
            owner = parse_comment(job.comment)
            pid = owner.get("pid", "")
            if owner.get("host") == host and pid.isdigit() and not _pid_alive(int(pid)):
                orphans.append(job.job_id)
        self.cli.cancel(orphans)
        return orphans
