"""Explicit job statuses: what happened to each point of a sweep, and why.

Statuses, by the phase that sets them::

    reused                      a valid result with the same identity exists (reuse.py)
    image-preflight-failed      the image breaks a policy rule before any GPU starts
    launch-failed               no server could be built or created (no adapter, a multinode
                                engine not wired, image pull refused, daemon error)
    server-start-timeout        the server never came up (no URL, nothing answering health)
    health-never-ready          health answered, but never 2xx before the deadline
    server-exited               the server died (exit code, 137 = killed/OOM, log tail)
    time-limit                  its batch allocation reached its time limit (Slurm TIMEOUT)
    node-failed                 a node of its allocation failed (Slurm NODE_FAIL)
    preempted                   its allocation was preempted (Slurm PREEMPTED)
    client-error-rate-exceeded  more failed requests than the policy allows (5%)
    result-invalid              zero throughput, AL off target, or the run was cut short
    eval-refused                an eval server whose command carries synthetic acceptance
    eval-failed                 the eval harness failed, or no eval setup was given
    cancelled                   Ctrl-C, or fail-fast after an earlier failure
    ok                          measured and judged good

``judge`` is pure: a RawResult plus the policy (``catalog/sweep-policy.yaml``) -> a verdict.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from inferx_pipeline.bench.result import RawResult
from inferx_pipeline.catalog import read_model
from inferx_pipeline.errors import (
    AllocationEndedError,
    InferxError,
    PreflightError,
    ServerExitedError,
    ServerStartTimeoutError,
)
from inferx_pipeline.strict import FrozenModel

JobStatus = Literal[
    "ok",
    "reused",
    "image-preflight-failed",
    "launch-failed",
    "server-start-timeout",
    "health-never-ready",
    "server-exited",
    "time-limit",
    "node-failed",
    "preempted",
    "client-error-rate-exceeded",
    "result-invalid",
    "eval-refused",
    "eval-failed",
    "cancelled",
]
GOOD_STATUSES: frozenset[str] = frozenset({"ok", "reused"})
Phase = Literal["preflight", "start", "health", "measure"]
POLICY_FILE = "sweep-policy.yaml"
# A batch allocation's end state -> the status of the point it ended (else server-exited);
# an allocation cancelled from outside (scancel) was stopped by a person.
ALLOCATION_STATUSES: dict[str, JobStatus] = {
    "TIMEOUT": "time-limit",
    "NODE_FAIL": "node-failed",
    "PREEMPTED": "preempted",
    "CANCELLED": "cancelled",
}


class SweepPolicy(FrozenModel):
    """When a measured point is a good result (data: ``catalog/sweep-policy.yaml``)."""

    max_client_error_rate: float = Field(ge=0, le=1, description="Failed / sent, at most.")
    al_relative_tolerance: float = Field(
        ge=0, description="|realized AL - target| / target, at most (synthetic acceptance)."
    )
    al_min_drafts: int = Field(ge=0, description="Fewer verify steps: AL check not significant.")
    min_output_throughput: float = Field(ge=0, description="Output tok/s must exceed this.")
    source: str
    rationale: dict[str, str] = Field(default_factory=dict)


def load_policy(catalog_dir: Path) -> SweepPolicy:
    """``catalog_dir/sweep-policy.yaml``; CatalogError naming the file when unreadable."""
    return read_model(catalog_dir / POLICY_FILE, SweepPolicy, "sweep policy")


class Verdict(FrozenModel):
    """A status and the human-readable reasons for it (empty for ok)."""

    status: JobStatus
    reasons: tuple[str, ...] = ()

    @property
    def message(self) -> str:
        return "; ".join(self.reasons)


def error_rate(result: RawResult) -> float:
    """Failed / (completed + failed); 1.0 when nothing was sent."""
    sent = result.completed + result.failed
    return result.failed / sent if sent else 1.0


def judge(result: RawResult, *, target_al: float | None, policy: SweepPolicy) -> Verdict:
    """The verdict on one measured point (pure).

    ``target_al`` is the synthetic acceptance length the server was told to use (None when
    acceptance is real or off): then the realized AL from ``/metrics`` must be within the
    policy's tolerance of it, once the point verified at least ``al_min_drafts`` drafts.
    """
    if result.stop_reason == "interrupted":
        return Verdict(status="cancelled", reasons=("interrupted while measuring",))
    if result.stop_reason == "deadline":  # cut short: what was measured is not the point
        return Verdict(status="result-invalid", reasons=_invalid_reasons(result, None, policy))
    rate = error_rate(result)
    if rate > policy.max_client_error_rate:
        first = next((e for e in result.errors if e), "")
        return Verdict(
            status="client-error-rate-exceeded",
            reasons=(
                f"{result.failed} of {result.completed + result.failed} requests failed "
                f"({rate:.1%} > {policy.max_client_error_rate:.0%})"
                + (f"; first error: {first}" if first else ""),
            ),
        )
    reasons = _invalid_reasons(result, target_al, policy) + _client_reasons(result)
    return Verdict(status="result-invalid", reasons=reasons) if reasons else Verdict(status="ok")


def _client_reasons(result: RawResult) -> tuple[str, ...]:
    # The client judged its own run (too short, lengths off, saturated): its word stands.
    if result.valid:
        return ()
    return tuple(f"client: {r}" for r in result.invalid_reasons) or ("client: marked invalid",)


def _invalid_reasons(
    result: RawResult, target_al: float | None, policy: SweepPolicy
) -> tuple[str, ...]:
    reasons = []
    if result.stop_reason == "deadline":
        reasons.append("point deadline reached before every request finished")
    if result.output_throughput <= policy.min_output_throughput:
        reasons.append(f"output throughput {result.output_throughput:g} tok/s (zero)")
    if target_al is not None:
        reasons.extend(_al_reasons(result, target_al, policy))
    return tuple(reasons)


def _al_reasons(result: RawResult, target_al: float, policy: SweepPolicy) -> list[str]:
    if result.acceptance is None:
        return [f"no speculative-decoding counters in /metrics; expected AL {target_al:g}"]
    if result.acceptance.drafts < policy.al_min_drafts:
        return []  # too few verify steps for the mean to be judged (see the policy file)
    realized = result.acceptance.acceptance_length
    off = abs(realized - target_al) / target_al
    if off > policy.al_relative_tolerance:
        return [
            f"realized acceptance length {realized:.3f} is {off:.1%} off the target "
            f"{target_al:g} (tolerance {policy.al_relative_tolerance:.0%})"
        ]
    return []


class Failure(FrozenModel):
    """A point that did not produce a judged result: its status and the evidence."""

    status: JobStatus
    message: str
    exit_code: int | None = Field(default=None, description="Server exit status (137 = killed).")
    oom_killed: bool = False
    log_tail: tuple[str, ...] = Field(default=(), description="Server's last log lines (<= 200).")


def failure_from_error(err: InferxError, phase: Phase, *, health_answered: bool = False) -> Failure:
    """The failure ``err`` means when raised in ``phase`` (pure).

    ``health_answered``: whether the health endpoint gave any HTTP answer before a
    health timeout (then the server runs but is not ready, rather than not up at all).
    """
    if isinstance(err, ServerExitedError):
        state = err.state if isinstance(err, AllocationEndedError) else ""
        ended = ALLOCATION_STATUSES.get(state)
        return Failure(
            status=ended or "server-exited",
            message=str(err),
            exit_code=err.status,
            oom_killed=err.oom_killed,
            log_tail=err.log_tail,
        )
    if isinstance(err, ServerStartTimeoutError):
        status: JobStatus = "health-never-ready" if health_answered else "server-start-timeout"
        return Failure(status=status, message=str(err), log_tail=err.log_tail)
    if isinstance(err, PreflightError) or phase == "preflight":
        return Failure(status="image-preflight-failed", message=str(err))
    return Failure(status="launch-failed", message=str(err))
