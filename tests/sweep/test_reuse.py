"""Point identity for reuse: every component changes the key; the index finds good attempts."""

from __future__ import annotations

from typing import Any

import pytest

from inferx_pipeline.bench.validity import ValidityRules, load_rules
from inferx_pipeline.engines.sim import SimOptions
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.artifacts import ArtifactStore, AttemptManifest
from inferx_pipeline.sweep.report import SweepOptions
from inferx_pipeline.sweep.reuse import (
    PointIdentity,
    ReuseIndex,
    point_identity,
    policy_version,
    simulated_digest,
)
from inferx_pipeline.sweep.status import SweepPolicy
from tests.engines.jobs import recipe_jobs

AGENTIC = "qwen3.5-fp8-mi300x-sglang-agentic-mtp"
OPTIONS = SweepOptions()


@pytest.fixture(scope="module")
def rules() -> ValidityRules:
    return load_rules(Settings().catalog_dir / "bench-validity.yaml")


def _identity(job: BenchmarkJob, **changes: Any) -> PointIdentity:
    args: dict[str, Any] = {
        "image_digest": "sha256:a",
        "client": "1.0",
        "options": OPTIONS,
        "policy": "p1",
    }
    return point_identity(job, **{**args, **changes})


def test_each_identity_component_changes_the_key(seed_jobs: list[BenchmarkJob]) -> None:
    job = seed_jobs[0]
    base = _identity(job)
    variants = [
        _identity(seed_jobs[1]),
        _identity(job, image_digest="sha256:b"),
        _identity(job, client="1.1"),
        _identity(job, policy="p2"),
    ]
    assert len({base.key, *(v.key for v in variants)}) == 5
    assert base.key == _identity(job).key


@pytest.mark.parametrize(
    "change",
    [
        {"seed": 1},
        {"prompts_per_conc": 11},
        {"num_prompts": 1},
        {"warmup_prompts": 2},
        {"point_deadline_s": 30.0},
        {"request_timeout_s": 60.0},
    ],
)
def test_each_measurement_option_changes_the_key(
    seed_jobs: list[BenchmarkJob], change: dict[str, Any]
) -> None:
    job = seed_jobs[0]
    changed = OPTIONS.model_copy(update=change)
    assert _identity(job, options=changed).key != _identity(job).key


@pytest.mark.parametrize("change", [{"max_turns": 2}, {"think_time_scale": 0.0}])
def test_agentic_options_change_the_key_of_agentic_jobs_only(
    seed_jobs: list[BenchmarkJob], change: dict[str, Any]
) -> None:
    agentic = recipe_jobs(AGENTIC)[0]
    changed = OPTIONS.model_copy(update=change)
    assert _identity(agentic, options=changed).key != _identity(agentic).key
    fixed = seed_jobs[0]  # fixed-seq-len: its random dataset has no turns or think times
    assert _identity(fixed, options=changed).key == _identity(fixed).key


@pytest.mark.parametrize("change", [{"force": True}, {"fail_fast": True}])
def test_options_that_change_no_result_keep_the_key(
    seed_jobs: list[BenchmarkJob], change: dict[str, Any]
) -> None:
    changed = OPTIONS.model_copy(update=change)
    assert _identity(seed_jobs[0], options=changed).key == _identity(seed_jobs[0]).key


def test_policy_version_follows_thresholds_not_prose(
    policy: SweepPolicy, rules: ValidityRules
) -> None:
    base = policy_version(policy, rules)
    assert base == policy_version(policy.model_copy(update={"source": "reworded"}), rules)
    assert base != policy_version(policy.model_copy(update={"max_client_error_rate": 0.1}), rules)
    assert base != policy_version(policy, rules.model_copy(update={"min_duration_s": 0.1}))


def test_index_keeps_only_ok_attempts(store: ArtifactStore, seed_jobs: list[BenchmarkJob]) -> None:
    job = seed_jobs[0]
    identity = _identity(job, image_digest="d", client="c")
    for status in ("result-invalid", "ok"):
        attempt = store.begin_attempt(job.fingerprint, job.conc)
        store.record(
            AttemptManifest(
                job_id=job.job_id,
                fingerprint=job.fingerprint,
                conc=job.conc,
                sku=job.sku,
                recipe_id=job.recipe_id,
                run_id="r",
                attempt=attempt,
                status=status,
                identity=identity.key,
                artifacts={},
                started_at=0,
                finished_at=attempt,
            )
        )
    hit = ReuseIndex(store).lookup(identity)
    assert hit is not None and hit.attempt == 2
    assert ReuseIndex(store).lookup(_identity(job, image_digest="other", client="c")) is None


def test_the_simulated_digest_follows_the_options_that_shape_its_numbers() -> None:
    base = simulated_digest(SimOptions())
    assert base == simulated_digest(None) == simulated_digest(SimOptions(load_time_s=0))
    assert base != simulated_digest(SimOptions(time_scale=0.02))
    assert base != simulated_digest(SimOptions(error_rate=0.1))
