"""SIGTERM, SIGINT and SIGKILL of a real ``inferx materialize`` mid-point, on the simulator.

SIGTERM and SIGINT stop it as they stop ``inferx sweep``: exit 130 with no traceback, its
Dagster run FAILURE with the point cut and the rest cancelled, the run recorded, no
server left, no later run started and nothing published. SIGKILL leaves its run STARTED
until the ``fail_dead_runs`` sensor or the next ``inferx materialize`` marks it FAILURE.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from inferx_pipeline.defs.execute import local_instance
from inferx_pipeline.defs.liveness import OWNER_TAG
from inferx_pipeline.defs.run_sensors import dead_runs_sensor
from inferx_pipeline.launch.ownership import ProcessLedger, group_members
from tests.defs.conftest import BF16, H200
from tests.faults.serving import in_flight
from tests.faults.sweeps import Sweep, assert_points_intact, recorded
from tests.smoke import smoke_root
from tests.sweep.conftest import SEED
from tests.sweep.test_cli_sweep import FAST_FLAGS

H200_ID = "qwen3.827b-fp8-h200-vllm-mtp"  # runs first: ranges are ordered by SKU
# Points of about a second, so a signal lands inside one.
SLOW = [f if f != "0.001" else "0.05" for f in FAST_FLAGS]


class Project:
    """A root with two seed recipes, a state directory and its Dagster instance."""

    def __init__(self, tmp: Path) -> None:
        self.state = tmp / "state"
        self.artifacts = self.state / "artifacts"
        self.env = {
            "INFERX_ROOT": str(smoke_root(tmp / "root", (H200, BF16))),
            "INFERX_STATE_DIR": str(self.state),
            "DAGSTER_HOME": str(self.state / "dagster"),
            "COLUMNS": "200",
        }

    def materialize(self, *recipes: str, publish: bool = True) -> Sweep:
        selection = [arg for recipe in recipes for arg in ("--recipe", recipe)]
        flags = [*selection, "--launcher", "sim", *SLOW, *([] if publish else ["--no-publish"])]
        return Sweep(flags, self.env, command="materialize")

    def owned(self) -> list[int]:
        return [entry.pgid for entry in ProcessLedger(self.state / "owned").entries()]

    def mid_point(self) -> bool:
        """A point recorded, and the next one's request being answered."""
        return recorded(self.artifacts) >= 1 and in_flight(self.owned())

    def sweep_runs(self) -> list[dg.DagsterRun]:
        instance = local_instance(self.state / "dagster")
        try:
            return [r for r in instance.get_runs() if r.job_name.startswith("sweep_")]
        finally:
            instance.dispose()


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    made = Project(tmp_path)
    yield made
    ProcessLedger(made.state / "owned").reap()  # a failed test leaves no server


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["term", "int"])
def test_signal_stops_the_run_and_starts_no_other(signum: signal.Signals, project: Project) -> None:
    command = project.materialize(H200_ID, SEED)  # two runs: h200, then mi325x
    try:
        command.wait_until(project.mid_point, "point")
        servers = project.owned()
        code, output = command.signal(signum)
    finally:
        command.stop()
    assert code == 130, output
    assert "Traceback" not in output, output
    assert (
        output.rstrip().splitlines()[-1] == "interrupted: later runs not started, nothing published"
    )
    (run,) = project.sweep_runs()  # the mi325x run never started
    assert (run.job_name, run.status) == ("sweep_h200", dg.DagsterRunStatus.FAILURE)
    assert "cancelled" in output and "interrupted while measuring" in output
    assert (project.artifacts / "runs" / f"{run.run_id}.json").is_file()  # recorded
    assert all(group_members(pgid) == [] for pgid in servers)
    assert project.owned() == []
    assert_points_intact(project.artifacts)
    assert not (project.state / "site").exists()


@pytest.mark.parametrize("by", ["sensor", "next-materialize"])
def test_killed_run_is_marked_failed(by: str, project: Project) -> None:
    command = project.materialize(SEED)
    try:
        command.wait_until(project.mid_point, "point")
        servers = project.owned()
        assert command.signal(signal.SIGKILL)[0] == -signal.SIGKILL
    finally:
        command.stop()
    (killed,) = project.sweep_runs()
    assert killed.status == dg.DagsterRunStatus.STARTED  # nothing else would ever end it
    assert killed.tags[OWNER_TAG].split(":")[1] == str(command.proc.pid)
    if by == "sensor":
        instance = local_instance(project.state / "dagster")
        try:
            tick = dead_runs_sensor().evaluate_tick(dg.build_sensor_context(instance=instance))
        finally:
            instance.dispose()
        assert tick.skip_message == f"marked failed: {killed.run_id}"
    else:
        code, output = project.materialize(SEED, publish=False).finish()
        assert code == 0, output
        assert f"run {killed.run_id}: its process is gone; marked FAILURE" in output
        assert all(group_members(pgid) == [] for pgid in servers)  # the next sweep reaped them
    (failed,) = [run for run in project.sweep_runs() if run.run_id == killed.run_id]
    assert failed.status == dg.DagsterRunStatus.FAILURE
    assert_points_intact(project.artifacts)
