"""A private PostgreSQL cluster for the test session, on 127.0.0.1 and a free port.

``postgres_server`` runs Debian's PostgreSQL 15 ``initdb`` + ``postgres`` as an
unprivileged user (initdb refuses root) with its data and socket in a fresh temp dir,
waits until it accepts connections, and stops it by PID at the end.
``postgres_url`` hands each test its own empty database. A missing or broken
PostgreSQL fails the tests that need it.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import psycopg2
import pytest

from tests.services.processes import stop
from tests.services.required import unavailable

PG_BIN = Path("/usr/lib/postgresql/15/bin")
UNPRIVILEGED_USER = "nobody"
START_DEADLINE_S = 30.0
STOP_DEADLINE_S = 15.0
SUPERUSER = "inferx"


@dataclass(frozen=True)
class PostgresServer:
    """A running cluster: where it listens and the process to stop."""

    host: str
    port: int
    user: str
    process: subprocess.Popen[bytes]
    log: Path

    def url(self, database: str) -> str:
        return f"postgresql+psycopg2://{self.user}@{self.host}:{self.port}/{database}"

    def admin(self) -> psycopg2.extensions.connection:
        conn = psycopg2.connect(host=self.host, port=self.port, user=self.user, dbname="postgres")
        conn.autocommit = True
        return conn


def _unavailable(reason: str) -> NoReturn:
    unavailable("PostgreSQL", reason)


def _ensure_installed() -> None:
    if (PG_BIN / "initdb").exists():
        return
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        _unavailable(f"{PG_BIN}/initdb missing and apt-get (as root) is not available")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "postgresql"]):
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            _unavailable(f"{' '.join(argv)} failed: {done.stderr.strip()[-500:]}")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_as() -> dict[str, object]:
    """subprocess kwargs that drop root to the unprivileged user (nothing when not root)."""
    if os.geteuid() != 0:
        return {}
    entry = pwd.getpwnam(UNPRIVILEGED_USER)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def _prepare(root: Path) -> tuple[Path, Path]:
    data, sockets = root / "data", root / "sock"
    sockets.mkdir()
    if os.geteuid() == 0:
        entry = pwd.getpwnam(UNPRIVILEGED_USER)
        for path in (root, sockets):
            os.chown(path, entry.pw_uid, entry.pw_gid)
    initdb = [str(PG_BIN / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust"]
    initdb += ["-E", "UTF8", "--no-sync", "--no-instructions"]
    done = subprocess.run(initdb, capture_output=True, text=True, check=False, **_run_as())  # type: ignore[call-overload]  # kwargs built by _run_as
    if done.returncode != 0:
        _unavailable(f"initdb failed: {done.stderr.strip()[-500:]}")
    return data, sockets


def _start(data: Path, sockets: Path, log: Path, port: int) -> subprocess.Popen[bytes]:
    argv = [str(PG_BIN / "postgres"), "-D", str(data), "-p", str(port), "-k", str(sockets)]
    # Loopback only; durability off: the cluster lives for one test session.
    argv += ["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"]
    argv += ["-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
    with log.open("wb") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, **_run_as())  # type: ignore[call-overload]  # kwargs built by _run_as


def _wait_ready(server: PostgresServer) -> None:
    deadline = time.monotonic() + START_DEADLINE_S
    last_error = "not polled yet"
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            _unavailable(f"postgres exited ({server.process.returncode}): {server.log.read_text()}")
        try:
            server.admin().close()
            return
        except psycopg2.OperationalError as err:
            last_error = str(err).strip()
        time.sleep(0.1)  # poll interval, not synchronisation: the deadline decides
    _unavailable(f"not ready after {START_DEADLINE_S}s: {last_error}")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A private cluster for the whole session; stopped by PID afterwards."""
    _ensure_installed()
    root = Path(tempfile.mkdtemp(prefix="inferx-pg-"))
    try:
        data, sockets = _prepare(root)
        log = root / "postgres.log"
        port = _free_port()
        process = _start(data, sockets, log, port)
        server = PostgresServer("127.0.0.1", port, SUPERUSER, process, log)
        try:
            _wait_ready(server)
            yield server
        finally:
            stop(process, STOP_DEADLINE_S, signal.SIGINT)  # PostgreSQL's fast shutdown
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh, empty database on the session cluster (dropped after the test)."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    admin = postgres_server.admin()
    try:
        with admin.cursor() as cur:
            cur.execute(f'CREATE DATABASE "{name}"')
        yield postgres_server.url(name)
        with admin.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        admin.close()
