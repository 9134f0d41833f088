"""Runs whose owner process is gone are failed; live, foreign and untagged runs are not."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from inferx_pipeline.defs.execute import local_instance
from inferx_pipeline.defs.liveness import OWNER_TAG, fail_dead_runs, owned_run
from inferx_pipeline.launch.ownership import Owner, process_start


@pytest.fixture
def instance(tmp_path: Path) -> Iterator[dg.DagsterInstance]:
    """The embedded instance, as ``inferx materialize`` writes it."""
    made = local_instance(tmp_path / "dagster")
    yield made
    made.dispose()


def _run(instance: dg.DagsterInstance, status: dg.DagsterRunStatus, owner: str | None) -> str:
    run_id = str(uuid.uuid4())
    tags = {OWNER_TAG: owner} if owner is not None else {}
    instance.add_run(dg.DagsterRun(job_name="sweep_h200", run_id=run_id, status=status, tags=tags))
    return run_id


def _gone() -> str:
    """The owner label of a process that has ended."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    started = process_start(proc.pid)
    assert started is not None
    proc.kill()
    proc.wait()
    return f"{socket.gethostname()}:{proc.pid}:{started}"


def test_embedded_instance_monitors_runs_without_resuming(instance: dg.DagsterInstance) -> None:
    assert instance.run_monitoring_enabled
    assert instance.run_monitoring_max_resume_run_attempts == 0  # DefaultRunLauncher cannot


def test_only_runs_of_dead_owners_are_failed(instance: dg.DagsterInstance) -> None:
    _, mine = owned_run()
    here = Owner.current("x")
    recycled = f"{here.host}:{os.getpid()}:{here.started + 1}"  # this PID, another process
    started = dg.DagsterRunStatus.STARTED
    dead = [_run(instance, started, _gone()), _run(instance, started, recycled),
            _run(instance, dg.DagsterRunStatus.CANCELING, _gone())]  # fmt: skip
    kept = [_run(instance, started, mine[OWNER_TAG]), _run(instance, started, None),
            _run(instance, started, "elsewhere:1:1"), _run(instance, dg.DagsterRunStatus.SUCCESS,
            _gone())]  # fmt: skip
    assert sorted(fail_dead_runs(instance, by="the test")) == sorted(dead)
    for run_id in dead:
        run = instance.get_run_by_id(run_id)
        assert run is not None and run.status == dg.DagsterRunStatus.FAILURE
    assert [r.status for r in map(instance.get_run_by_id, kept) if r] == [
        started, started, started, dg.DagsterRunStatus.SUCCESS]  # fmt: skip
    assert fail_dead_runs(instance, by="the test") == []  # failed runs are finished
