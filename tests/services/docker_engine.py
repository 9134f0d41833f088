"""Session fixtures for a real, private Docker engine and the images the tests run.

``docker_engine`` starts Debian's ``dockerd`` on a private socket (installing
``docker.io`` when it is missing) and stops it, by its PID, at session end. Its
data-root persists under ``/var/tmp`` so images built once survive to the next
session on the same machine; a second concurrent session gets a throwaway data-root
instead of sharing (two daemons on one data-root corrupt it).

``base_image`` is the debootstrap Debian base, ``sim_image`` the simulator engine
image built on it and ``old_python_image`` the base with a ``python3`` reporting 3.10
(see ``tests/services/engine_images.py``); each is cached by the hash of its inputs.
Nothing here skips: a missing service fails the tests that need it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, NoReturn

import docker
import pytest
from docker.errors import DockerException

from tests.services import engine_images
from tests.services.processes import stop
from tests.services.required import unavailable as required

PERSISTENT_DATA_ROOT = Path("/var/tmp/inferx-docker")
READY_DEADLINE_S = 60.0
STOP_GRACE_S = 20.0


@dataclass(frozen=True)
class DockerEngine:
    """A running private daemon: its ``unix://`` URL and a client bound to it."""

    url: str
    client: docker.DockerClient
    data_root: Path


def unavailable(reason: str) -> NoReturn:
    """Fail the test: the private Docker engine (or what it needs) could not be had."""
    required("the private Docker engine", reason)


def _ensure_dockerd() -> str:
    found = shutil.which("dockerd") or shutil.which("dockerd", path="/usr/sbin:/usr/bin")
    if found:
        return found
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "docker.io"]):
        if subprocess.run(cmd, env=env, capture_output=True, check=False).returncode != 0:
            unavailable("dockerd is missing and `apt-get install docker.io` failed")
    return shutil.which("dockerd", path="/usr/sbin:/usr/bin") or unavailable("no dockerd")


@contextlib.contextmanager
def _data_root() -> Iterator[Path]:
    """The persistent data-root if no other session holds it, else a throwaway one."""
    PERSISTENT_DATA_ROOT.mkdir(parents=True, exist_ok=True)
    with (PERSISTENT_DATA_ROOT.parent / "inferx-docker.lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            scratch = Path(tempfile.mkdtemp(prefix="inferx-docker-", dir="/var/tmp"))
            try:
                yield scratch
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            return
        yield PERSISTENT_DATA_ROOT


def _accepts(socket_path: str) -> bool:
    # A raw connect first: docker-py leaks a socket on every refused connection.
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(socket_path)
        except OSError:
            return False
    return True


def _wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> docker.DockerClient:
    deadline = time.monotonic() + READY_DEADLINE_S
    socket_path = url.removeprefix("unix://")
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            unavailable(f"dockerd exited {proc.returncode}: {log.read_text()[-2000:]}")
        if _accepts(socket_path):
            client = docker.DockerClient(base_url=url, timeout=120)
            if client.ping():
                return client
            client.close()
        time.sleep(0.2)  # polling the daemon's socket with a deadline
    unavailable(f"dockerd at {url} not ready after {READY_DEADLINE_S:.0f} s")


def _remove_leftover_containers(client: docker.DockerClient) -> None:
    # The data-root is private to this project's tests: anything left is from a crashed session.
    for container in client.containers.list(all=True):
        with contextlib.suppress(DockerException):
            container.remove(force=True)


@contextlib.contextmanager
def running_dockerd(data_root: Path) -> Iterator[DockerEngine]:
    """Start ``dockerd`` on a fresh private socket/exec-root over ``data_root``; stop it after."""
    dockerd = _ensure_dockerd()
    run_dir = Path(tempfile.mkdtemp(prefix="inferx-dockerd-"))
    url = f"unix:///tmp/inferx-docker-{os.getpid()}.sock"
    log = run_dir / "dockerd.log"
    argv = [
        dockerd, f"--host={url}", f"--data-root={data_root}",
        f"--exec-root={run_dir / 'exec'}", f"--pidfile={run_dir / 'dockerd.pid'}",
        "--iptables=false", "--bridge=none",
    ]  # fmt: skip
    with log.open("wb") as out:
        proc = _spawn(argv, out)
    try:
        client = _wait_ready(url, proc, log)
        _remove_leftover_containers(client)
        yield DockerEngine(url=url, client=client, data_root=data_root)
        client.close()
    finally:
        stop(proc, STOP_GRACE_S)
        _unmount_under(run_dir)
        shutil.rmtree(run_dir, ignore_errors=True)


def _unmount_under(top: Path) -> None:
    # dockerd leaves its default netns bind-mounted in the exec-root; unmount, deepest first.
    mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
    for mount in sorted((m for m in mounts if m.startswith(f"{top}/")), reverse=True):
        subprocess.run(["umount", mount], capture_output=True, check=False)


def _spawn(argv: list[str], out: IO[bytes]) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PATH": f"/usr/sbin:/usr/bin:/sbin:/bin:{os.environ.get('PATH', '')}"}
    return subprocess.Popen(
        argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
    )


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[DockerEngine]:
    """A private Docker daemon for this test session (see the module docstring)."""
    with _data_root() as data_root, running_dockerd(data_root) as engine:
        yield engine


@pytest.fixture(scope="session")
def base_image(docker_engine: DockerEngine) -> str:
    """Tag of the debootstrap Debian base image (python3 + venv), built once per input hash."""
    if not engine_images.debootstrap_available():
        unavailable("debootstrap is missing and `apt-get install debootstrap` failed")
    return engine_images.ensure_base_image(docker_engine.client)


@pytest.fixture(scope="session")
def old_python_image(docker_engine: DockerEngine, base_image: str) -> str:
    """Tag of an image whose ``python3`` reports 3.10.12 (the agentic Python rule rejects it)."""
    return engine_images.ensure_old_python_image(docker_engine.client, base_image)


@pytest.fixture(scope="session")
def sim_image(docker_engine: DockerEngine, base_image: str) -> str:
    """Tag of the simulator engine image (``inferx`` entrypoint), rebuilt when its inputs change."""
    return engine_images.ensure_sim_image(docker_engine.client, base_image)
