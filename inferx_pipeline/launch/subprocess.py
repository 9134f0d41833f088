"""Runs a ServerSpec's argv as a child process on this machine (the embedded simulator).

With ``spec.port == 0`` the launcher passes ``0`` for ``{port}`` and reads the bound
URL from the child's ``INFERX_SIM_LISTENING http://HOST:PORT`` stdout line. The child
gets its own process group: ``stop()`` sends SIGTERM to the group, then SIGKILL after
the grace period, until no process of the group is left, even when the leader exited
before its children. stdout and stderr go, merged, to a log file and an in-memory tail.

Ownership: with a ``ProcessLedger`` each group is recorded under its run until it is
stopped, so the next sweep stops what a killed run left (``ownership.py``); and a
child started from the main thread gets SIGTERM from the kernel when its parent dies
(Linux ``PR_SET_PDEATHSIG``), so even a SIGKILL of the sweep leaves no server behind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from inferx_pipeline import parentdeath
from inferx_pipeline.errors import LaunchError, ServerStartTimeoutError
from inferx_pipeline.launch.base import (
    LOG_TAIL_LINES,
    LogBuffer,
    ServerHandle,
    cleanup_on_failure,
    fill_port,
    log_file,
)
from inferx_pipeline.launch.local_deploy import start_deployment
from inferx_pipeline.launch.ownership import Owner, ProcessLedger, process_start, stop_group
from inferx_pipeline.launch.secrets import engine_env
from inferx_pipeline.launch.spec import ServerSpec

LISTENING_PREFIX = "INFERX_SIM_LISTENING "
URL_POLL_S = 0.1
READER_JOIN_S = 5.0


def resolve_executable(argv: tuple[str, ...], python: str = sys.executable) -> tuple[str, ...]:
    """``argv`` with its program made absolute.

    ``python``/``python3`` mean the running interpreter; a bare name is looked up next
    to it first (its venv's ``bin``, where ``inferx`` lives), then on ``PATH``. Raises
    ``LaunchError`` when the program is nowhere.
    """
    head, rest = argv[0], argv[1:]
    if head in ("python", "python3"):
        return (python, *rest)
    if os.sep in head:
        return argv
    found = shutil.which(head, path=str(Path(python).parent)) or shutil.which(head)
    if found is None:
        raise LaunchError(
            f"executable {head!r} not found next to {python} or on PATH; "
            "install it into this environment or give an absolute path in argv[0]"
        )
    return (found, *rest)


def exit_code(returncode: int) -> int:
    """A Popen return code as a shell/Docker exit status: killed by signal N -> 128 + N."""
    return returncode if returncode >= 0 else 128 - returncode


class SubprocessHandle(ServerHandle):
    """A child process started by ``SubprocessLauncher``."""

    def __init__(
        self,
        spec: ServerSpec,
        proc: subprocess.Popen[bytes],
        log: LogBuffer,
        grace_s: float,
        ledger: ProcessLedger | None = None,
    ) -> None:
        fixed = f"http://127.0.0.1:{spec.port}" if spec.port else ""
        super().__init__(spec, fixed, log)
        self.proc = proc
        self.grace_s = grace_s
        self.ledger = ledger
        self._url_seen = threading.Event()
        self._stopped = False
        started = process_start(proc.pid)
        assert started is not None  # an unreaped child keeps its /proc entry
        # Told apart from a later group that reuses the PID once the leader is reaped.
        self._leader_started = started
        assert proc.stdout is not None  # Popen(stdout=PIPE) always has one
        self._reader = threading.Thread(
            target=self._read, args=(proc.stdout,), name=f"log-{spec.name}", daemon=True
        )
        self._reader.start()

    def _read(self, stream: IO[bytes]) -> None:
        for raw in stream:
            line = raw.decode("utf-8", errors="replace")
            self.log.append(line)
            if line.startswith(LISTENING_PREFIX) and not self._url_seen.is_set():
                self.base_url = line[len(LISTENING_PREFIX) :].strip()
                self._url_seen.set()
        stream.close()

    def await_url(self, timeout_s: float) -> None:
        """Block until the child printed its URL (only needed for port 0).

        Raises ``ServerExitedError`` if it exits first, ``ServerStartTimeoutError`` after
        ``timeout_s`` seconds.
        """
        deadline = time.monotonic() + timeout_s
        while not self.base_url:
            self.raise_if_exited()
            if time.monotonic() >= deadline:
                raise ServerStartTimeoutError(
                    f"server {self.spec.name}: no '{LISTENING_PREFIX.strip()} <url>' line on "
                    f"stdout after {timeout_s:g} s; read its log {self.log_path}",
                    log_tail=self.logs(LOG_TAIL_LINES),
                )
            self._url_seen.wait(URL_POLL_S)

    def exit_status(self) -> int | None:
        rc = self.proc.poll()
        if rc is None:
            return None
        # The exit is only final for callers once its last output has been read.
        self._reader.join(READER_JOIN_S)
        return exit_code(rc)

    def stop(self) -> None:
        """SIGTERM the whole group, SIGKILL what is left after ``grace_s``, and return
        once no process of it remains (idempotent). Children outliving their leader, or
        ignoring SIGTERM, are stopped too: the group outlives its leader."""
        if self._stopped:
            return
        self._stopped = True
        stop_group(self.proc.pid, self._leader_started, self.grace_s)
        self.proc.wait()
        if self.ledger is not None:
            self.ledger.forget(self.proc.pid)
        self._reader.join(READER_JOIN_S)
        self.log.close()


class SubprocessLauncher:
    """Starts servers as child processes; logs go under ``log_dir``.

    ``environ`` (default: this process's environment, read at construction) is where
    the child's host basics and secrets come from; the child gets only those and the
    spec's ``env`` (``secrets.engine_env``).
    """

    def __init__(
        self,
        log_dir: Path,
        *,
        grace_s: float = 10.0,
        environ: Mapping[str, str] | None = None,
        ledger: ProcessLedger | None = None,
        run_id: str = "",
    ) -> None:
        self.log_dir = log_dir
        self.grace_s = grace_s
        self.environ = dict(os.environ if environ is None else environ)
        self.ledger = ledger
        self.run_id = run_id

    def start(self, spec: ServerSpec) -> ServerHandle:
        """Start ``spec``'s argv; return once its URL is known (not yet healthy).

        Raises ``LaunchError`` (program missing), ``ServerExitedError`` or
        ``ServerStartTimeoutError``; on any failure the child is already stopped.
        """
        if spec.deployment is not None:  # every rank a child process, and the router
            return start_deployment(spec, self.start, log_dir=self.log_dir)
        argv = resolve_executable(fill_port(spec.argv, spec.port))
        env = engine_env(spec, self.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")  # the URL line must not sit in a buffer
        log = LogBuffer(log_file(self.log_dir, spec))
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                # Runs in the forked child before exec; it only calls prctl and getppid.
                preexec_fn=parentdeath.preexec(),
            )
        except OSError as err:
            log.close()
            raise LaunchError(f"server {spec.name}: cannot run {argv[0]}: {err}") from err
        handle = SubprocessHandle(spec, proc, log, self.grace_s, self.ledger)
        with cleanup_on_failure(handle):
            if self.ledger is not None:
                self.ledger.record(Owner.current(self.run_id), proc.pid)
            handle.await_url(spec.startup_timeout_s)
        return handle
