"""A worker spanning two nodes: rank 0 waits for rank 1, and either dying ends the other."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator

import pytest

from tests.sim.test_disagg import free_port

QWEN = ["--sku", "h100", "--model-family", "qwen3.8-27b", "--load-time-s", "0"]
DEADLINE_S = 30.0


def _rank(rank: int, master_port: int) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "inferx_pipeline", "sim", "serve", *QWEN, "--port", "0"]
    nodes = ["--nnodes", "2", "--node-rank", str(rank), "--master-port", str(master_port)]
    if rank:
        nodes += ["--master-addr", "127.0.0.1"]
    return subprocess.Popen(
        [*argv, *nodes], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
        process.communicate(timeout=10)


def _until(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not check():
        assert time.monotonic() < deadline, f"condition not met within {DEADLINE_S} s"
        time.sleep(0.05)


def _health(url: str) -> int:
    try:
        with urllib.request.urlopen(url + "/health", timeout=5) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as err:
        return err.code


def _leader(processes: list[subprocess.Popen[str]], master_port: int) -> str:
    leader = _rank(0, master_port)
    processes.append(leader)
    assert leader.stdout is not None
    line = leader.stdout.readline()
    assert line.startswith("INFERX_SIM_LISTENING "), line
    return line.split()[1]


def test_rank0_is_ready_only_with_rank1_and_dies_with_it(
    processes: list[subprocess.Popen[str]],
) -> None:
    master_port = free_port()
    url = _leader(processes, master_port)
    assert _health(url) == 503
    follower = _rank(1, master_port)
    processes.append(follower)
    _until(lambda: _health(url) == 200)
    follower.send_signal(signal.SIGKILL)
    _until(lambda: processes[0].poll() is not None)
    _, stderr = processes[0].communicate(timeout=10)
    assert processes[0].returncode == 1
    assert "Error: rank 1 " in stderr and "left the worker" in stderr


def test_rank1_exits_when_the_leader_goes_away(processes: list[subprocess.Popen[str]]) -> None:
    master_port = free_port()
    url = _leader(processes, master_port)
    follower = _rank(1, master_port)
    processes.append(follower)
    _until(lambda: _health(url) == 200)
    processes[0].send_signal(signal.SIGKILL)
    _until(lambda: follower.poll() is not None)
    _, stderr = follower.communicate(timeout=10)
    assert follower.returncode == 1
    assert f"Error: rank 1: the leader at 127.0.0.1:{master_port} went away" in stderr
