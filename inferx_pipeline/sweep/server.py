"""The one live server of a group: started on demand, restarted only after it died.

``GroupServer.ensure()`` returns a healthy handle: the running one, or a fresh start
(launch, wait for health with the spec's deadline, optional warmup) when there is
none or the last one died. It remembers the phase it failed in and whether health
ever answered, which is what tells a start timeout from a server that never got ready.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Callable

from inferx_pipeline.bench.runner import benchmark
from inferx_pipeline.errors import ServerStartTimeoutError
from inferx_pipeline.launch.base import HEALTH_REQUEST_TIMEOUT_S, Launcher, ServerHandle
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.sweep.measure import warmup_config
from inferx_pipeline.sweep.status import Phase

# Called once per server start (the runner counts launches with it).
OnLaunch = Callable[[ServerHandle], None]


def health_answers(url: str) -> bool:
    """Whether ``url`` gives any HTTP answer at all (a 503 counts; refused does not)."""
    try:
        with urllib.request.urlopen(url, timeout=HEALTH_REQUEST_TIMEOUT_S):
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError, ValueError):
        return False


class GroupServer:
    """At most one running server for one spec; ``stop()`` is always safe to call."""

    def __init__(
        self,
        spec: ServerSpec,
        launcher: Launcher,
        *,
        warmup_job: BenchmarkJob,
        warmup_prompts: int,
        on_launch: OnLaunch,
    ) -> None:
        self.spec = spec
        self.launcher = launcher
        self.warmup_job = warmup_job
        self.warmup_prompts = warmup_prompts
        self.on_launch = on_launch
        self.handle: ServerHandle | None = None
        self.last: ServerHandle | None = None  # kept after stop(): its log outlives it
        self.phase: Phase = "start"
        self.health_answered = False

    def ensure(self) -> ServerHandle:
        """A healthy server; raises the launcher's LaunchError family when none can start."""
        if self.handle is not None:
            if self.handle.exit_status() is None:
                return self.handle
            self.stop()  # it died between points: that is the one reason to restart
        self.phase, self.health_answered = "start", False
        self.handle = self.last = self.launcher.start(self.spec)
        self.on_launch(self.handle)
        self.phase = "health"
        try:
            self.handle.wait_healthy()
        except ServerStartTimeoutError:
            self.health_answered = health_answers(self.handle.base_url + self.spec.health_path)
            raise
        if self.warmup_prompts:
            config = warmup_config(
                self.warmup_job, self.spec, self.handle.base_url, self.warmup_prompts
            )
            benchmark(config)
            self.handle.raise_if_exited()
        self.phase = "measure"
        return self.handle

    def provenance(self) -> dict[str, str]:
        """Where the last started server runs or ran; {} when that start failed in the launcher.

        A launcher that raises from ``start`` returns no handle (a Slurm job that ended
        before its engine printed its port names itself in the error message instead).
        """
        if self.last is None or self.phase == "start":
            return {}
        return self.last.provenance

    def log_bytes(self) -> bytes | None:
        """The current (or last) server's whole log so far; None before any start."""
        if self.last is None:
            return None
        try:
            return self.last.log_path.read_bytes()
        except OSError:
            return "\n".join(self.last.logs()).encode()

    def stop(self) -> None:
        """Stop and forget the server (its log file stays)."""
        if self.handle is not None:
            self.handle.stop()
            self.handle = None
