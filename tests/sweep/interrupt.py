"""Ctrl-C a real ``inferx sweep`` process mid-run and check what it left (shared by tests)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from inferx_pipeline.sweep.artifacts import ArtifactStore
from inferx_pipeline.sweep.runs import load_run

INTERRUPT_DEADLINE_S = 90.0


def _first_manifest(artifacts: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + INTERRUPT_DEADLINE_S
    while not list(artifacts.glob("attempts/*/c*/*.json")):
        assert proc.poll() is None, "the sweep ended before its first point was recorded"
        assert time.monotonic() < deadline, "no point recorded before the deadline"
        time.sleep(0.05)  # polling the artifact directory, bounded by the deadline


def interrupt_after_first_point(args: list[str], env: dict[str, str], artifacts: Path) -> tuple[
    int, str, list[int]
]:  # fmt: skip
    """Run ``inferx`` with ``args``; Ctrl-C its process group once one point is recorded.

    Returns the exit code, the output and the PIDs its children had when interrupted.
    """
    proc = subprocess.Popen(
        [sys.executable, "-m", "inferx_pipeline", *args], env={**os.environ, **env},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        _first_manifest(artifacts, proc)
        children = [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        output, _ = proc.communicate(timeout=INTERRUPT_DEADLINE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, output, children


def assert_cancelled_cleanly(code: int, output: str, artifacts: Path) -> None:
    """Exit 130 with no traceback; finished points ok and kept, every other one cancelled."""
    assert code == 130, output
    assert "Traceback" not in output, output
    counts = output.rstrip().splitlines()[-1]
    assert counts.startswith("8 jobs: ") and "cancelled" in counts, output
    statuses = {part.split()[1] for part in counts.removeprefix("8 jobs: ").split(", ")}
    assert statuses == {"ok", "cancelled"}, counts
    store = ArtifactStore(artifacts)
    kept = [m for m in store.all_attempts() if m.status == "ok"]
    assert kept and all(store.read(sha) for m in kept for sha in m.artifacts.values())
    newest = max((artifacts / "runs").glob("*.json"), key=lambda path: path.stat().st_mtime)
    record = load_run(artifacts, newest.stem)  # the interrupted run's record says so
    assert record is not None and record.interrupted, record
