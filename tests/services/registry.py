"""Session fixture for a real, private image registry (Debian's ``docker-registry``).

``registry`` starts ``docker-registry serve`` (Distribution 2.8, Registry HTTP API v2) on
127.0.0.1 and a free port with its storage in a temporary directory, waits for ``/v2/``
with a deadline, and stops it by its PID at session end. ``docker-registry`` is installed
with apt-get when missing. A missing or broken registry fails the
tests that need it (``unavailable`` from the Docker engine fixture).

dockerd treats 127.0.0.0/8 registries as insecure (plain HTTP) by default, so the
``docker_engine`` fixture can push to it without extra daemon flags.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from tests.services.docker_engine import unavailable
from tests.services.processes import stop

READY_DEADLINE_S = 30.0
STOP_GRACE_S = 10.0


@dataclass(frozen=True)
class LocalRegistry:
    """A running registry: its base URL and the host part of image references for it."""

    url: str
    host: str
    storage: Path


def _ensure_binary() -> str:
    found = shutil.which("docker-registry", path="/usr/bin:/usr/sbin")
    if found:
        return found
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-qq", "docker-registry"]
    for cmd in (["apt-get", "update", "-qq"], install):
        if subprocess.run(cmd, env=env, capture_output=True, check=False).returncode != 0:
            unavailable("image registry: `apt-get install docker-registry` failed")
    return shutil.which("docker-registry", path="/usr/bin:/usr/sbin") or unavailable(
        "image registry: docker-registry is still missing after apt-get install"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _config(storage: Path, port: int) -> str:
    return (
        "version: 0.1\n"
        "log:\n  level: warn\n"
        f"storage:\n  filesystem:\n    rootdirectory: {storage}\n"
        f"http:\n  addr: 127.0.0.1:{port}\n"
    )


def _answers(url: str) -> bool:
    try:
        return requests.get(f"{url}/v2/", timeout=2).status_code == 200
    except requests.RequestException:
        return False


def _wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_DEADLINE_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            unavailable(f"image registry exited {proc.returncode}: {log.read_text()[-2000:]}")
        if _answers(url):
            return
        time.sleep(0.1)  # polling /v2/ with a deadline
    unavailable(f"image registry at {url} not ready after {READY_DEADLINE_S:.0f} s")


@pytest.fixture(scope="session")
def registry() -> Iterator[LocalRegistry]:
    """A private registry for this test session (see the module docstring)."""
    binary = _ensure_binary()
    work = Path(tempfile.mkdtemp(prefix="inferx-registry-"))
    port = _free_port()
    config = work / "config.yml"
    config.write_text(_config(work / "storage", port))
    log = work / "registry.log"
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [binary, "serve", str(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_ready(url, proc, log)
        yield LocalRegistry(url=url, host=f"127.0.0.1:{port}", storage=work / "storage")
    finally:
        stop(proc, STOP_GRACE_S)
        shutil.rmtree(work, ignore_errors=True)
