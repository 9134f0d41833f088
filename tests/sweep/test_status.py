"""Judging a measured point against the sweep policy, and mapping errors to statuses."""

from __future__ import annotations

import asyncio

import pytest

from inferx_pipeline.bench.client import Request
from inferx_pipeline.bench.config import BenchConfig
from inferx_pipeline.bench.datasets import RandomSpec
from inferx_pipeline.bench.fake import FakeSender
from inferx_pipeline.bench.result import Acceptance, RawResult
from inferx_pipeline.bench.runner import run_benchmark
from inferx_pipeline.errors import (
    LaunchError,
    PreflightError,
    ServerExitedError,
    ServerStartTimeoutError,
)
from inferx_pipeline.sweep.status import SweepPolicy, failure_from_error, judge


def _result(fail_every: int = 0, prompts: int = 40) -> RawResult:
    config = BenchConfig(
        endpoint="http://127.0.0.1:9",
        model="m",
        dataset=RandomSpec(input_len=8, output_len=4),
        concurrency=4,
        num_prompts=prompts,
        scrape_metrics=False,
    )

    def fail(request: Request) -> bool:
        return bool(fail_every) and request.index % fail_every == 0

    result = asyncio.run(run_benchmark(config, sender=FakeSender(fail=fail)))
    # These tests judge the sweep policy alone: the client's own verdict is taken as valid.
    return result.model_copy(update={"valid": True, "invalid_reasons": []})


def _with_al(result: RawResult, al: float, drafts: float = 1000) -> RawResult:
    accepted = (al - 1) * drafts
    acceptance = Acceptance(
        drafts=drafts, draft_tokens=3 * drafts, accepted_tokens=accepted, acceptance_length=al
    )
    return result.model_copy(update={"acceptance": acceptance})


def test_clean_run_is_ok(policy: SweepPolicy) -> None:
    assert judge(_result(), target_al=None, policy=policy).status == "ok"


def test_error_rate_above_five_percent_fails(policy: SweepPolicy) -> None:
    verdict = judge(_result(fail_every=10), target_al=None, policy=policy)  # 4 of 40 = 10%
    assert verdict.status == "client-error-rate-exceeded"
    assert verdict.message.startswith("4 of 40 requests failed (10.0% > 5%); first error: fake")


def test_error_rate_at_the_threshold_passes(policy: SweepPolicy) -> None:
    assert judge(_result(fail_every=20), target_al=None, policy=policy).status == "ok"  # 5%


def test_zero_throughput_is_invalid(policy: SweepPolicy) -> None:
    result = _result().model_copy(update={"output_throughput": 0.0})
    verdict = judge(result, target_al=None, policy=policy)
    assert verdict.status == "result-invalid"
    assert verdict.reasons == ("output throughput 0 tok/s (zero)",)


@pytest.mark.parametrize(("realized", "status"), [(2.45, "ok"), (2.35, "result-invalid")])
def test_realized_al_must_be_within_five_percent(
    policy: SweepPolicy, realized: float, status: str
) -> None:
    verdict = judge(_with_al(_result(), realized), target_al=2.51, policy=policy)
    assert verdict.status == status


def test_al_off_target_message_names_both(policy: SweepPolicy) -> None:
    verdict = judge(_with_al(_result(), 2.0), target_al=2.51, policy=policy)
    assert verdict.reasons == (
        "realized acceptance length 2.000 is 20.3% off the target 2.51 (tolerance 5%)",
    )


def test_al_from_too_few_drafts_is_not_judged(policy: SweepPolicy) -> None:
    result = _with_al(_result(), 2.0, drafts=policy.al_min_drafts - 1)
    assert judge(result, target_al=2.51, policy=policy).status == "ok"


def test_synthetic_run_without_counters_is_invalid(policy: SweepPolicy) -> None:
    verdict = judge(_result(), target_al=2.51, policy=policy)
    assert verdict.reasons == ("no speculative-decoding counters in /metrics; expected AL 2.51",)


def test_interrupted_run_is_cancelled(policy: SweepPolicy) -> None:
    result = _result().model_copy(update={"stop_reason": "interrupted", "status": "incomplete"})
    assert judge(result, target_al=None, policy=policy).status == "cancelled"


def test_errors_map_to_statuses() -> None:
    exited = ServerExitedError("x", status=137, oom_killed=True, log_tail=("a", "b"))
    failure = failure_from_error(exited, "measure")
    assert (failure.status, failure.exit_code, failure.oom_killed) == ("server-exited", 137, True)
    assert failure.log_tail == ("a", "b")
    timeout = ServerStartTimeoutError("t", log_tail=("z",))
    assert failure_from_error(timeout, "start").status == "server-start-timeout"
    answered = failure_from_error(timeout, "health", health_answered=True)
    assert answered.status == "health-never-ready"
    assert failure_from_error(PreflightError("p"), "preflight").status == "image-preflight-failed"
    assert failure_from_error(LaunchError("pull refused"), "start").status == "launch-failed"


def test_a_run_the_client_marked_invalid_is_result_invalid_with_its_reasons(
    policy: SweepPolicy,
) -> None:
    invalid = _result().model_copy(
        update={"valid": False, "invalid_reasons": ["measured for 0.01 s, less than 10 s"]}
    )
    verdict = judge(invalid, target_al=None, policy=policy)
    assert verdict.status == "result-invalid"
    assert verdict.reasons == ("client: measured for 0.01 s, less than 10 s",)
