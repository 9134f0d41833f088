"""A multinode deployment on this one host: each worker rank a process, and the router.

::

    handle = start_deployment(spec, launcher.start, log_dir=logs)   # spec.deployment set
    handle.wait_healthy()          # every worker's /health, then the router's
    run_client(handle.base_url)    # the router

What Slurm places on nodes (``slurm_deploy``) runs here on loopback, for the simulator
(``subprocess`` launcher) and for real engines whose workers fit this host (``local``
launcher): the same argv with ``{port}``, ``{bootstrap_port}`` (the port after it, as on
Slurm) and ``{master_port}`` free ports of this host, ``{master}`` 127.0.0.1,
``{rank}``/``{nnodes}`` the rank and the worker's node count, ``{shared}`` a folder of this
deployment under the log folder.
``start_one`` starts one rank's process (the launcher's own ``start``), so each keeps its
launcher's program lookup, ownership and log; the router runs with this interpreter. A
worker whose process ends ends the deployment: ``exited_error`` names it with its own
last log lines.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path

from inferx_pipeline.errors import LaunchError, ServerExitedError
from inferx_pipeline.launch.base import (
    HEALTH_POLL_S,
    LOG_TAIL_LINES,
    LogBuffer,
    ServerHandle,
    held_ports,
    log_file,
)
from inferx_pipeline.launch.router import await_workers, start_router
from inferx_pipeline.launch.spec import DeploymentSpec, ServerSpec, WorkerSpec

StartOne = Callable[[ServerSpec], ServerHandle]


def fill(argv: tuple[str, ...], values: dict[str, str]) -> tuple[str, ...]:
    """``argv`` with every ``{name}`` of ``values`` replaced (pure)."""
    out = []
    for arg in argv:
        for name, value in values.items():
            arg = arg.replace("{" + name + "}", value)
        out.append(arg)
    return tuple(out)


class LocalDeployment(ServerHandle):
    """The processes of a deployment's ranks and its router; ``base_url`` is the router's."""

    def __init__(
        self, spec: ServerSpec, log_dir: Path, start_one: StartOne, start_router: StartOne
    ) -> None:
        super().__init__(spec, "", LogBuffer(log_file(log_dir, spec)))
        assert spec.deployment is not None
        self.deployment: DeploymentSpec = spec.deployment
        self.start_one = start_one
        self.start_router = start_router
        self.shared = log_dir / f"kv-{uuid.uuid4().hex[:12]}"
        self.ranks: list[tuple[WorkerSpec, ServerHandle]] = []
        self.endpoints: tuple[str, ...] = ()
        self.router: ServerHandle | None = None

    def launch(self) -> None:
        """Start every rank of every worker (not yet healthy)."""
        self.shared.mkdir(parents=True, exist_ok=True)
        with held_ports() as take:  # distinct ports for all workers, bound after
            plans = []
            for worker in self.deployment.workers:
                port = take(2)  # the router finds a prefill's KV bootstrap at its port + 1
                values = {
                    "port": str(port), "bootstrap_port": str(port + 1),
                    "master_port": str(take(1)), "master": "127.0.0.1",
                    "nnodes": str(len(worker.nodes)), "shared": str(self.shared),
                    "job": self.shared.name,
                }  # fmt: skip
                plans.append((worker, port, values))
        endpoints = []
        for worker, port, values in plans:
            for rank in range(len(worker.nodes)):
                argv = worker.follower_argv if rank and worker.follower_argv else worker.argv
                one = self.spec.model_copy(
                    update={
                        "name": f"{self.spec.name}/{worker.label}/r{rank}",
                        "argv": fill(argv, {**values, "rank": str(rank)}),
                        "port": port,
                        "deployment": None,
                    }
                )
                self.ranks.append((worker, self.start_one(one)))
                self.log.append(f"{worker.label} r{rank}: {self.ranks[-1][1].log_path}")
            endpoints.append(f"http://127.0.0.1:{port}")
        self.endpoints = tuple(endpoints)

    def wait_healthy(self, timeout_s: float | None = None) -> None:
        """Every worker's health, then the router started and its health."""
        budget = self.spec.startup_timeout_s if timeout_s is None else timeout_s
        deadline = self.started_at + budget
        pairs = list(zip(self.deployment.workers, self.endpoints, strict=True))
        logs = f"the workers' logs under {self.log_path.parent}"
        pause = partial(time.sleep, HEALTH_POLL_S)  # polling health, bounded by the deadline
        await_workers(self, pairs, deadline=deadline, logs=logs, pause=pause)
        self.router = start_router(self.spec, pairs, self.start_router)
        self.base_url = self.router.base_url
        super().wait_healthy(max(1.0, deadline - time.monotonic()))

    @property
    def provenance(self) -> dict[str, str]:
        """Each worker's URL (``decode[0]=http://...``) and the router that ran."""
        pairs = zip(self.deployment.workers, self.endpoints, strict=False)
        router = self.deployment.router
        return {
            "workers": " ".join(f"{w.label}={url}" for w, url in pairs),
            "router_ran": f"{router.name} {router.version}",
        }

    def _ended(self) -> tuple[str, ServerHandle, int] | None:
        for worker, handle in self.ranks:
            if (status := handle.exit_status()) is not None:
                return worker.label, handle, status
        if self.router is not None and (status := self.router.exit_status()) is not None:
            return f"router {self.deployment.router.name}", self.router, status
        return None

    def exit_status(self) -> int | None:
        ended = self._ended()
        return None if ended is None else ended[2]

    def exited_error(self, status: int) -> ServerExitedError:
        ended = self._ended()
        if ended is None:
            return super().exited_error(status)
        what, handle, code = ended
        tail = handle.logs(LOG_TAIL_LINES)
        last = "\n  ".join(tail[-10:]) or "(no output)"
        return ServerExitedError(
            f"server {self.spec.name}: {what} exited with status {code}; its last log lines:"
            f"\n  {last}\n(full log: {handle.log_path})",
            status=code,
            oom_killed=handle.oom_killed,
            log_tail=tail,
        )

    def stop(self) -> None:
        """Stop the router, then every rank (each idempotent); the logs stay."""
        for handle in [self.router, *(h for _, h in reversed(self.ranks))]:
            if handle is not None:
                with contextlib.suppress(LaunchError):
                    handle.stop()
        self.log.close()


def start_deployment(
    spec: ServerSpec, start_one: StartOne, *, log_dir: Path, start_router: StartOne | None = None
) -> LocalDeployment:
    """Start ``spec``'s workers here with ``start_one`` (and later its router with
    ``start_router``, default ``start_one``: a child process of this interpreter's);
    everything started is stopped again if any start fails."""
    handle = LocalDeployment(spec, log_dir, start_one, start_router or start_one)
    try:
        handle.launch()
    except BaseException:
        handle.stop()
        raise
    return handle
