"""``dagster dev`` as a child process that starts and stops cleanly from scripts.

Started in the background by a non-interactive shell, ``dagster dev`` inherits SIGINT
ignored and maps SIGTERM onto it, so it would ignore both. ``DagsterDev`` resets both
signals to their defaults in the child before exec, runs it in its own session (it
starts a webserver, a daemon and a code server), waits for ``/server_info`` with a
deadline, and stops the whole session by its PID: SIGTERM, then SIGKILL after a grace.
``DgDev`` does the same for ``dg dev`` in the project directory (``[tool.dg]``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from inferx_pipeline.errors import LaunchError

READY_POLL_S = 0.25
STOP_GRACE_S = 20.0


def _default_signals() -> None:
    # Runs in the child between fork and exec: undo an inherited SIG_IGN.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # the whole session has exited already
        os.killpg(pgid, signum)


def _alive(pgid: int) -> bool:
    """Whether any process of the session ``pgid`` (ours) still runs."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


class DagsterDev:
    """One ``dagster dev -w workspace`` on ``host:port`` with ``DAGSTER_HOME=home``."""

    def __init__(
        self,
        workspace: Path,
        home: Path,
        *,
        host: str = "127.0.0.1",
        port: int,
        log: Path,
        env: dict[str, str] | None = None,
    ) -> None:
        self.workspace = workspace
        self.home = home
        self.host = host
        self.port = port
        self.log = log
        self.env = env
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The webserver's base URL."""
        return f"http://{self.host}:{self.port}"

    def argv(self) -> list[str]:
        """The command line: ``dagster dev -w WORKSPACE -h HOST -p PORT``."""
        dagster = Path(sys.executable).with_name("dagster")
        return [
            str(dagster),
            "dev",
            "-w",
            str(self.workspace),
            "-h",
            self.host,
            "-p",
            str(self.port),
        ]

    def cwd(self) -> Path:
        """The directory it runs in."""
        return self.workspace.parent

    def start(self) -> None:
        """Spawn the server; its output goes to ``log``."""
        self.home.mkdir(parents=True, exist_ok=True)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        env = {**(self.env if self.env is not None else os.environ), "DAGSTER_HOME": str(self.home)}
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.argv(),
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.cwd(),
                preexec_fn=_default_signals,  # resets two signals only: safe before exec
                start_new_session=True,
            )

    def wait_ready(self, deadline_s: float, stopped: Callable[[], bool] = lambda: False) -> bool:
        """Poll ``/server_info`` until it answers (True), or until ``stopped()`` (False);
        LaunchError (with the log tail) when the server exits or the deadline passes."""
        assert self.process is not None, "start() first"
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            if stopped():
                return False
            if self.process.poll() is not None:
                raise LaunchError(
                    f"dagster dev exited with {self.process.returncode}: {self._tail()}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/server_info", timeout=2) as answer:
                    if answer.status == 200:
                        return True
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(READY_POLL_S)  # polling a starting server, under a deadline
        raise LaunchError(
            f"dagster dev did not answer {self.url}/server_info within {deadline_s:.0f} s: "
            f"{self._tail()}"
        )

    def stop(self) -> int | None:
        """SIGTERM the session, SIGKILL what is left after the grace period; the exit status."""
        process, self.process = self.process, None
        if process is None:
            return None
        _signal_group(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        while time.monotonic() < deadline and (process.poll() is None or _alive(process.pid)):
            time.sleep(READY_POLL_S)  # polling the session's processes, under a deadline
        _signal_group(process.pid, signal.SIGKILL)
        code = process.wait(STOP_GRACE_S)
        # The leader is reaped; killed members may still be dying (or awaiting init's reap).
        deadline = time.monotonic() + STOP_GRACE_S
        while _alive(process.pid) and time.monotonic() < deadline:
            time.sleep(READY_POLL_S)  # polling the session's processes, under a deadline
        return code

    def _tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-2000:]
        except OSError:
            return f"(no log at {self.log})"

    def __enter__(self) -> DagsterDev:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()


class DgDev(DagsterDev):
    """``dg dev`` in the dg project directory ``workspace`` (its ``[tool.dg]``), same lifecycle.

    ``dg`` runs the project's code from the virtual environment ``VIRTUAL_ENV`` names.
    """

    def argv(self) -> list[str]:
        """The command line: ``dg dev -h HOST -p PORT``."""
        dg = Path(sys.executable).with_name("dg")
        return [str(dg), "dev", "-h", self.host, "-p", str(self.port)]

    def cwd(self) -> Path:
        """The project directory."""
        return self.workspace
