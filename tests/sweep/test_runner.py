"""``run_sweep``'s run record: written when stopping dead runs' servers fails (the sweep goes
on, the failure noted), and when the sweep itself fails unexpectedly (then re-raised); each
point measured for the validity rules' minimum duration."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from inferx_pipeline.bench.validity import load_rules
from inferx_pipeline.catalog import Catalog
from inferx_pipeline.errors import LaunchError
from inferx_pipeline.launch.ownership import Reaped
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.artifacts import ArtifactStore
from inferx_pipeline.sweep.report import NullProgress
from inferx_pipeline.sweep.runner import run_sweep
from inferx_pipeline.sweep.runs import load_run
from inferx_pipeline.sweep.status import SweepPolicy
from tests.sweep.conftest import FAST, sim_backend

SQUEUE_DOWN = "squeue --json --me: cannot run: timed out after 30 seconds"


def _squeue_times_out() -> Reaped:
    raise LaunchError(SQUEUE_DOWN)


def _one_job_refused() -> Reaped:
    return Reaped(kind="Slurm job", stopped=("11",), failed={"12": "scancel: Access denied"})


@pytest.mark.parametrize(
    ("prepare", "note"),
    [
        (_squeue_times_out, f"stopping the servers of dead runs failed: {SQUEUE_DOWN}"),
        (
            _one_job_refused,
            "could not stop 1 Slurm job(s) of dead runs (12: scancel: Access denied); "
            "they may still hold resources: stop them by hand",
        ),
    ],
)
def test_a_failed_clean_up_is_noted_in_the_record_and_the_sweep_goes_on(
    prepare: Callable[[], Reaped], note: str, seed_jobs: list[BenchmarkJob], catalog: Catalog,
    store: ArtifactStore, policy: SweepPolicy, tmp_path: Path,
) -> None:  # fmt: skip
    backend = dataclasses.replace(sim_backend(catalog, tmp_path / "logs"), prepare=prepare)
    report = run_sweep(seed_jobs[:1], backend=backend, artifacts=store, policy=policy, options=FAST)
    assert [o.status for o in report.outcomes] == ["ok"]
    assert report.notes == (note,)
    record = load_run(store.root, report.run_id)
    assert record is not None and record.notes == (note,)


class _Breaks(NullProgress):
    def point_started(self, job: BenchmarkJob) -> None:
        raise RuntimeError("a bug")


def test_an_unexpected_error_still_leaves_a_record_then_propagates(
    seed_jobs: list[BenchmarkJob], catalog: Catalog, store: ArtifactStore,
    policy: SweepPolicy, tmp_path: Path,
) -> None:  # fmt: skip
    backend = sim_backend(catalog, tmp_path / "logs")
    with pytest.raises(RuntimeError, match="a bug"):
        run_sweep(
            seed_jobs[:2], backend=backend, artifacts=store, policy=policy, options=FAST,
            progress=_Breaks(), run_id="broken",
        )  # fmt: skip
    record = load_run(store.root, "broken")
    assert record is not None
    assert [line.status for line in record.outcomes] == ["cancelled", "cancelled"]
    assert record.outcomes[0].message == "sweep failed (RuntimeError('a bug')) before this job"


def test_each_point_lasts_the_validity_rules_minimum(
    seed_jobs: list[BenchmarkJob], catalog: Catalog, store: ArtifactStore,
    policy: SweepPolicy, tmp_path: Path,
) -> None:  # fmt: skip
    rules = load_rules(Settings().catalog_dir / "bench-validity.yaml")
    backend = sim_backend(catalog, tmp_path / "logs")
    report = run_sweep(
        seed_jobs[:1], backend=backend, artifacts=store, policy=policy, options=FAST,
        validity=rules.model_copy(update={"min_duration_s": 0.3}),
    )  # fmt: skip
    result = report.outcomes[0].result
    assert result is not None and result.min_duration_s == 0.3
    assert result.duration >= 0.3 and result.num_prompts > result.dataset.num_prompts == 1
