"""The launcher contract: ``Launcher.start(spec) -> ServerHandle``, used as a context manager.

::

    with launcher.start(spec) as server:      # stopped on exit, error, timeout, Ctrl-C
        server.wait_healthy()                 # polls spec.health_path until its deadline
        run_client(server.base_url)

Every handle keeps the server's log (a file plus an in-memory tail) after the server
is gone, so a failed job can report its last lines.
"""

from __future__ import annotations

import contextlib
import re
import socket
import time
import urllib.error
import urllib.request
import uuid
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from threading import Lock
from types import TracebackType
from typing import Protocol, Self

from inferx_pipeline.errors import LaunchError, ServerExitedError, ServerStartTimeoutError
from inferx_pipeline.launch.spec import ServerSpec

HEALTH_POLL_S = 0.2
HEALTH_REQUEST_TIMEOUT_S = 2.0
LOG_TAIL_LINES = 200
PORT_PLACEHOLDER = "{port}"


def log_file(log_dir: Path, spec: ServerSpec) -> Path:
    """A new, unique log path for one start of ``spec`` (never overwrites an earlier one)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", spec.name)[:80] or "server"
    stamp = time.strftime("%Y%m%dT%H%M%S")
    return log_dir / f"{safe}-{stamp}-{uuid.uuid4().hex[:8]}.log"


def fill_port(argv: tuple[str, ...], port: int) -> tuple[str, ...]:
    """``argv`` with every ``{port}`` replaced by ``port`` (pure)."""
    return tuple(arg.replace(PORT_PLACEHOLDER, str(port)) for arg in argv)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now; the server binds it moments later (a race
    another process could win, which the server's start then reports)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def held_ports(host: str = "127.0.0.1", tries: int = 32) -> Iterator[Callable[[int], int]]:
    """``take(n)``: the first of ``n`` consecutive TCP ports free on ``host``, each kept
    bound until the block ends, so that no two ports handed out in one block collide (a
    deployment's HTTP, bootstrap and rendezvous ports); the servers bind them after."""
    held: list[socket.socket] = []

    def take(count: int) -> int:
        for _ in range(tries):
            run = [socket.socket(socket.AF_INET, socket.SOCK_STREAM)]
            run[0].bind((host, 0))
            port = int(run[0].getsockname()[1])
            try:
                for offset in range(1, count):
                    run.append(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
                    run[-1].bind((host, port + offset))
            except OSError:  # a port of the run is taken (or past 65535): another run
                for sock in run:
                    sock.close()
                continue
            held.extend(run)
            return port
        raise LaunchError(f"no {count} consecutive free TCP ports on {host} in {tries} tries")

    try:
        yield take
    finally:
        for sock in held:
            sock.close()


class LogBuffer:
    """A server's log: every line appended to a file, the last ``keep`` also in memory.

    Thread-safe: a reader thread appends while the caller reads the tail.
    """

    def __init__(self, path: Path, keep: int = LOG_TAIL_LINES) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._tail: deque[str] = deque(maxlen=keep)
        self._lock = Lock()
        self._file = path.open("a", encoding="utf-8")

    def append(self, line: str) -> None:
        line = line.rstrip("\r\n")
        with self._lock:
            self._tail.append(line)
            if not self._file.closed:
                self._file.write(line + "\n")
                self._file.flush()

    def tail(self, n: int | None = None) -> tuple[str, ...]:
        """The last ``n`` lines (all kept lines when ``n`` is None)."""
        with self._lock:
            lines = tuple(self._tail)
        return lines if n is None else lines[-n:] if n > 0 else ()

    def close(self) -> None:
        with self._lock:
            self._file.close()


def http_ok(url: str, timeout_s: float = HEALTH_REQUEST_TIMEOUT_S) -> bool:
    """Whether a GET of ``url`` answers 2xx; refused, reset or timed out counts as not yet."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return 200 <= int(response.status) < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


class ServerHandle(ABC):
    """A started server. Subclasses provide the process/container specifics.

    ``stop()`` is idempotent; leaving the ``with`` block always calls it, whatever
    ended the block (including ``KeyboardInterrupt``).
    """

    def __init__(self, spec: ServerSpec, base_url: str, log: LogBuffer) -> None:
        self.spec = spec
        self.base_url = base_url
        self.log = log
        self.started_at = time.monotonic()

    @abstractmethod
    def exit_status(self) -> int | None:
        """None while running, else the exit code (137 = killed, e.g. by the OOM killer)."""

    @abstractmethod
    def stop(self) -> None:
        """Stop the server (graceful, then forced), release everything, keep the log."""

    @property
    def oom_killed(self) -> bool:
        """Whether the runtime reports the server was killed for memory (Docker only knows)."""
        return False

    @property
    def provenance(self) -> dict[str, str]:
        """Where the server runs, for its results (e.g. a Slurm job id); {} when nothing to add."""
        return {}

    @property
    def log_path(self) -> Path:
        return self.log.path

    def logs(self, tail: int | None = None) -> tuple[str, ...]:
        """The server's log lines so far (the last ``tail`` of them when given)."""
        return self.log.tail(tail)

    def exited_error(self, status: int) -> ServerExitedError:
        """The error for this server having exited with ``status``, carrying its log tail."""
        why = " (OOM-killed)" if self.oom_killed else " (killed)" if status == 137 else ""
        tail = self.logs(LOG_TAIL_LINES)
        last = "\n  ".join(tail[-10:]) or "(no output)"
        return ServerExitedError(
            f"server {self.spec.name} exited with status {status}{why}; last log lines:\n  {last}"
            f"\n(full log: {self.log_path})",
            status=status,
            oom_killed=self.oom_killed,
            log_tail=tail,
        )

    def raise_if_exited(self) -> None:
        """Raise ``ServerExitedError`` if the server is no longer running."""
        status = self.exit_status()
        if status is not None:
            raise self.exited_error(status)

    def wait_healthy(self, timeout_s: float | None = None) -> None:
        """Poll ``spec.health_path`` until it answers 2xx.

        The deadline is ``spec.startup_timeout_s`` seconds after the start (so time
        spent in ``start()`` counts), or ``timeout_s`` seconds from now when given.
        Raises ``ServerExitedError`` as soon as the server dies,
        ``ServerStartTimeoutError`` when the deadline passes first.
        """
        if timeout_s is None:
            budget, deadline = self.spec.startup_timeout_s, self.started_at
        else:
            budget, deadline = timeout_s, time.monotonic()
        deadline += budget
        url = self.base_url.rstrip("/") + self.spec.health_path
        while True:
            self.raise_if_exited()
            if http_ok(url, min(HEALTH_REQUEST_TIMEOUT_S, max(0.1, deadline - time.monotonic()))):
                return
            if time.monotonic() >= deadline:
                raise ServerStartTimeoutError(
                    f"server {self.spec.name}: {url} not healthy after {budget:g} s; "
                    f"raise startup_timeout_s or read its log {self.log_path}",
                    log_tail=self.logs(LOG_TAIL_LINES),
                )
            time.sleep(HEALTH_POLL_S)  # poll interval, bounded by the deadline above

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def refuse_deployment(spec: ServerSpec, launcher: str) -> None:
    """LaunchError for a multinode deployment given to a launcher of one server."""
    if spec.deployment is not None:
        raise LaunchError(
            f"server {spec.name}: a multinode job ({len(spec.deployment.workers)} workers and "
            f"a router) does not run on the {launcher} launcher; run it with --launcher slurm"
        )


class Launcher(Protocol):
    """Starts servers. ``start`` returns once the server runs and its URL is known.

    ``start`` itself cleans up whatever it began if it fails or is interrupted.
    """

    def start(self, spec: ServerSpec) -> ServerHandle: ...


@contextlib.contextmanager
def cleanup_on_failure(handle: ServerHandle) -> Iterator[None]:
    """Stop ``handle`` if the block raises anything (including ``KeyboardInterrupt``)."""
    try:
        yield
    except BaseException:
        handle.stop()
        raise
