"""The sweep's image preflight hook with a fake probe runner: failures per group, facts recorded."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.errors import PreflightError
from inferx_pipeline.launch.fake import FakeLauncher, FakeProbeRunner
from inferx_pipeline.launch.preflight import FactCache, default_probes
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.sweep.artifacts import ArtifactStore
from inferx_pipeline.sweep.preflight import ImagePreflight
from inferx_pipeline.sweep.runner import run_sweep
from inferx_pipeline.sweep.status import SweepPolicy
from tests.engines.jobs import recipe_jobs
from tests.sweep.conftest import FAST, policy_data, sim_backend
from tests.sweep.test_image_policy import AGENTIC_SGLANG, _job_and_spec

PY = default_probes().common[0].argv
SGLANG = default_probes().engines["sglang"][0].argv
SIM = default_probes().engines["sim"][0].argv


def _hook(
    tmp_path: Path, outputs: dict[tuple[str, ...], tuple[int, str]], *, simulated: bool
) -> tuple[ImagePreflight, FakeProbeRunner]:
    runner = FakeProbeRunner(outputs, digest="sha256:abc")
    cache = FactCache(tmp_path / "facts.json")
    return ImagePreflight(runner, cache, policy_data(), simulated=simulated), runner


def test_old_python_in_an_agentic_image_names_the_fact_and_the_rule(tmp_path: Path) -> None:
    job, spec = _job_and_spec(AGENTIC_SGLANG)
    hook, _ = _hook(tmp_path, {PY: (0, "Python 3.10.12\n"), SGLANG: (0, "0.5.16\n")},
                    simulated=False)  # fmt: skip
    with pytest.raises(PreflightError) as info:
        hook(job, spec)
    assert str(info.value) == (
        f"image {spec.image}: python 3.10.12; agentic recipes need >= 3.11, < 3.14 "
        "(rule image-facts); image digest sha256:abc: use an image that satisfies it or "
        "change the recipe"
    )


def test_old_sglang_breaks_the_token_mode_gate_and_the_cache_answers_next_time(
    tmp_path: Path,
) -> None:
    job, spec = _job_and_spec(AGENTIC_SGLANG)
    hook, runner = _hook(tmp_path, {PY: (0, "3.12.3\n"), SGLANG: (0, "0.5.14\n")},
                         simulated=False)  # fmt: skip
    for _ in range(2):
        with pytest.raises(PreflightError, match=r": sglang 0\.5\.14; acceptance synthetic needs "
                           r">= 0\.5\.16: SGLANG_SIMULATE_ACC_TOKEN_MODE"):  # fmt: skip
            hook(job, spec)
    assert runner.runs == 2  # two probes, once: the second check came from the cache


def test_failed_preflight_fails_every_job_of_the_group_and_starts_nothing(
    catalog: Catalog, store: ArtifactStore, policy: SweepPolicy, tmp_path: Path
) -> None:
    agentic = recipe_jobs(AGENTIC_SGLANG)
    jobs = [j for j in agentic if j.server_key == agentic[0].server_key]
    hook, _ = _hook(tmp_path, {PY: (0, "3.10.12\n"), SIM: (0, "0.1.0\n")}, simulated=True)
    launcher = FakeLauncher()
    backend = dataclasses.replace(sim_backend(catalog, tmp_path), launcher=launcher,
                                  preflight=hook)  # fmt: skip
    report = run_sweep(jobs, backend=backend, artifacts=store, policy=policy, options=FAST)
    assert {o.status for o in report.outcomes} == {"image-preflight-failed"}
    assert "python 3.10.12; agentic recipes need >= 3.11, < 3.14 (rule image-facts)" in (
        report.outcomes[0].message
    )
    assert launcher.started == [] and report.server_launches == 0
    assert len(list(store.all_attempts())) == len(jobs)  # each failure is a recorded attempt


def test_passing_preflight_records_the_engine_version_in_the_result(
    catalog: Catalog, store: ArtifactStore, policy: SweepPolicy, seed_jobs: list[BenchmarkJob],
    tmp_path: Path,
) -> None:  # fmt: skip
    hook, _ = _hook(tmp_path, {PY: (0, "3.10.12\n"), SIM: (0, "0.1.0\n")}, simulated=True)
    backend = dataclasses.replace(sim_backend(catalog, tmp_path / "logs"), preflight=hook)
    report = run_sweep(seed_jobs[:1], backend=backend, artifacts=store, policy=policy,
                       options=FAST)  # fmt: skip
    (outcome,) = report.outcomes
    assert outcome.status == "ok", outcome.message  # fixed-seq-len: no Python rule
    assert (
        outcome.result is not None
        and outcome.result.metadata["engine_version"] == "inferx-sim-0.1.0"
    )
