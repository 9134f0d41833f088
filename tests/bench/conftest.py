"""Fixtures of the bench client tests: the in-process SSE test server, a simulator process."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.bench.server import TestServer, serve

SIM_ARGS = ("--sku", "h100", "--model-family", "qwen3.8-27b", "--max-model-len", "4096")
SIM_MODEL = "qwen3.8-27b"


@pytest.fixture
def server() -> Iterator[TestServer]:
    """A fresh test server on 127.0.0.1, port 0."""
    yield from serve()


@dataclass(frozen=True)
class SimProcess:
    """``inferx sim serve`` in its own process (so a test can kill it), and its base URL."""

    process: subprocess.Popen[str]
    url: str


@pytest.fixture
def sim_process() -> Iterator[SimProcess]:
    """A simulator process on a free loopback port at a tenth of real time, ready to serve.

    Ready means bound: it prints its URL once listening and has no load time.
    """
    argv = [sys.executable, "-m", "inferx_pipeline", "sim", "serve", *SIM_ARGS]
    process = subprocess.Popen(
        [*argv, "--port", "0", "--load-time-s", "0", "--time-scale", "0.1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # printed and flushed once bound
        assert line.startswith("INFERX_SIM_LISTENING "), line
        yield SimProcess(process, line.split()[1])
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
