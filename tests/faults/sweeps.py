"""A real ``inferx sweep`` process, signalled mid-point, and what it leaves behind.

The sweep runs in its own session (like a service under a supervisor); the signal goes
to its PID alone, as ``kill`` or a container stop sends it, never to its servers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from inferx_pipeline.sweep.artifacts import ArtifactStore

DEADLINE_S = 120.0
POLL_S = 0.05


class Sweep:
    """``inferx COMMAND ARGS`` (``sweep`` unless told) with ``env`` laid over this
    process's environment."""

    def __init__(
        self,
        args: list[str],
        env: dict[str, str],
        deadline_s: float = DEADLINE_S,
        command: str = "sweep",
    ) -> None:
        self.deadline_s = deadline_s
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "inferx_pipeline", command, *args],
            env={**os.environ, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )

    def wait_until(self, ready: Callable[[], bool], what: str) -> None:
        """Poll ``ready`` until true; fail if the sweep ends or the deadline passes first."""
        deadline = time.monotonic() + self.deadline_s
        while not ready():
            assert self.proc.poll() is None, f"the sweep ended before {what}: {self.finish()}"
            assert time.monotonic() < deadline, f"no {what} before the deadline"
            time.sleep(POLL_S)  # polling files and processes, bounded by the deadline

    def signal(self, signum: signal.Signals) -> tuple[int, str]:
        """Send ``signum`` to the sweep alone; its exit code and output once it ended."""
        self.proc.send_signal(signum)
        return self.finish()

    def stop(self) -> None:
        """End the sweep if it still runs (SIGTERM: it stops its own servers), for cleanup."""
        if self.proc.poll() is None:
            self.signal(signal.SIGTERM)

    def finish(self) -> tuple[int, str]:
        """Wait for the sweep to end (killed at the deadline); exit code and output."""
        try:
            output, _ = self.proc.communicate(timeout=self.deadline_s)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.communicate()
        return self.proc.returncode, output


def recorded(artifacts: Path) -> int:
    """How many attempt manifests the artifact directory holds."""
    return len(list(artifacts.glob("attempts/*/c*/*.json")))


def assert_points_intact(artifacts: Path) -> None:
    """Every manifest readable, and every artifact of the good ones verifies."""
    store = ArtifactStore(artifacts)
    manifests, damaged = store.scan()
    assert damaged == [], damaged
    good = [m for m in manifests if m.status == "ok"]
    assert good, [m.status for m in manifests]
    assert all(store.damage(m) is None for m in good)
