"""MLPerf-style validity: each result says valid or not, and why.

Thresholds are data (``catalog/bench-validity.yaml``, each with its rationale);
this module only loads and applies them. Rules never drop a result: an invalid
one is written with its reasons.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from inferx_pipeline.bench.monitor import ClientLoad
from inferx_pipeline.catalog import read_model
from inferx_pipeline.strict import StrictModel


class Tolerance(StrictModel):
    """Allowed |measured - intended| = relative x intended + absolute_tokens."""

    relative: float = Field(ge=0)
    absolute_tokens: float = Field(ge=0)

    def allows(self, measured: float, intended: float) -> bool:
        """Whether ``measured`` is close enough to ``intended``."""
        return abs(measured - intended) <= self.relative * intended + self.absolute_tokens


class Saturation(StrictModel):
    """When the client, not the server, limits what is measured.

    The client is judged by its own work: its CPU above ``max_cpu_percent``, or a late
    loop while its own CPU is at least ``lag_owned_cpu_percent``. A late loop with the
    client's CPU below that is other processes on its cores (a CPU engine on the same
    host): reported as contention, which does not make a point invalid.
    """

    max_event_loop_lag_p99_ms: float = Field(gt=0)
    max_cpu_percent: float = Field(gt=0)
    lag_owned_cpu_percent: float = Field(gt=0)

    def _late(self, load: ClientLoad) -> bool:
        return load.event_loop_lag_p99_ms > self.max_event_loop_lag_p99_ms

    def saturated(self, load: ClientLoad) -> bool:
        """Whether the client's own work exceeds its budget."""
        owned = load.cpu_percent >= self.lag_owned_cpu_percent
        return load.cpu_percent > self.max_cpu_percent or (self._late(load) and owned)

    def contended(self, load: ClientLoad) -> bool:
        """Whether the loop ran late while the client itself was mostly idle."""
        return self._late(load) and not self.saturated(load)


class ValidityRules(StrictModel):
    """The thresholds of ``catalog/bench-validity.yaml``."""

    source: str
    percentile_min_samples: dict[str, int]
    min_duration_s: float = Field(ge=0)
    isl_tolerance: Tolerance
    osl_tolerance: Tolerance
    max_failed_fraction: float = Field(ge=0, le=1)
    saturation: Saturation
    rationale: dict[str, str]


def load_rules(path: Path) -> ValidityRules:
    """Rules from a YAML file; raises CatalogError naming the file and the field."""
    return read_model(path, ValidityRules, "validity rules")


@dataclass(frozen=True)
class RunFacts:
    """What the rules look at, measured over one run."""

    planned: int
    completed: int
    failed: int
    duration_s: float
    min_duration_s: float
    stop_reason: str
    intended_isl_mean: float | None
    measured_isl_mean: float | None
    intended_osl_mean: float | None
    measured_osl_mean: float | None
    client: ClientLoad


def _length_reason(
    name: str, tolerance: Tolerance, measured: float | None, intended: float | None
) -> list[str]:
    if measured is None or intended is None or tolerance.allows(measured, intended):
        return []
    return [
        f"measured {name} mean {measured:.1f} tokens is off the intended {intended:.1f} "
        f"by more than {tolerance.relative:.0%} + {tolerance.absolute_tokens:g}"
    ]


def _why_short(rules: ValidityRules, facts: RunFacts) -> str:
    # A point runs to its minimum by construction; only these three end it sooner.
    if facts.stop_reason:
        return f"the run stopped early ({facts.stop_reason})"
    if facts.min_duration_s < rules.min_duration_s:
        return (
            f"the client was asked for {facts.min_duration_s:g} s only; "
            f"rerun with --min-duration-s {rules.min_duration_s:g} (the default)"
        )
    return "requests kept failing, so the client stopped adding more"


def invalid_reasons(rules: ValidityRules, facts: RunFacts) -> list[str]:
    """Every rule ``facts`` breaks, as one readable line each (empty = valid)."""
    reasons = []
    if facts.stop_reason:
        reasons.append(
            f"stopped early ({facts.stop_reason}): {facts.completed + facts.failed} "
            f"requests finished in {facts.duration_s:.2f} s; a full point sends at least "
            f"{facts.planned} over at least {facts.min_duration_s:g} s"
        )
    if facts.completed == 0:
        reasons.append(f"all {facts.failed} requests failed")
    elif facts.failed > rules.max_failed_fraction * (facts.completed + facts.failed):
        reasons.append(
            f"{facts.failed} of {facts.completed + facts.failed} requests failed "
            f"(more than {rules.max_failed_fraction:.0%})"
        )
    if facts.duration_s < rules.min_duration_s:
        reasons.append(
            f"measured for {facts.duration_s:.2f} s, less than the minimum "
            f"{rules.min_duration_s:g} s: {_why_short(rules, facts)}"
        )
    reasons += _length_reason(
        "ISL", rules.isl_tolerance, facts.measured_isl_mean, facts.intended_isl_mean
    )
    reasons += _length_reason(
        "OSL", rules.osl_tolerance, facts.measured_osl_mean, facts.intended_osl_mean
    )
    if rules.saturation.saturated(facts.client):
        reasons.append(
            f"client saturated (event-loop lag p99 {facts.client.event_loop_lag_p99_ms:.1f} ms, "
            f"CPU {facts.client.cpu_percent:.0f}%); rerun with more --processes"
        )
    return reasons
