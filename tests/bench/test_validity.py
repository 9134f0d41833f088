"""Validity rules: thresholds from catalog/bench-validity.yaml applied to run facts."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferx_pipeline.bench.monitor import ClientLoad
from inferx_pipeline.bench.validity import RunFacts, ValidityRules, invalid_reasons, load_rules
from inferx_pipeline.errors import CatalogError

CATALOG = Path(__file__).resolve().parents[2] / "catalog" / "bench-validity.yaml"
IDLE = ClientLoad(event_loop_lag_p99_ms=0.5, cpu_percent=20.0)


def _facts(**changes: object) -> RunFacts:
    base = {
        "planned": 1000, "completed": 1000, "failed": 0, "duration_s": 60.0,
        "min_duration_s": 10.0, "stop_reason": "",
        "intended_isl_mean": 1024.0, "measured_isl_mean": 1030.0,
        "intended_osl_mean": 1024.0, "measured_osl_mean": 1024.0, "client": IDLE,
    }  # fmt: skip
    return RunFacts(**(base | changes))  # type: ignore[arg-type]  # test helper


@pytest.fixture(scope="module")
def rules() -> ValidityRules:
    return load_rules(CATALOG)


def test_shipped_thresholds_match_the_issue(rules: ValidityRules) -> None:
    assert rules.percentile_min_samples["p90"] == 64
    assert rules.percentile_min_samples["p99"] == 662
    assert set(rules.rationale) >= {"percentile_min_samples", "min_duration_s"}


def test_clean_run_is_valid(rules: ValidityRules) -> None:
    assert invalid_reasons(rules, _facts()) == []


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"duration_s": 3.0}, "measured for 3.00 s, less than the minimum 10 s: requests kept"),
        ({"duration_s": 3.0, "min_duration_s": 0.0}, "rerun with --min-duration-s 10 (the"),
        ({"duration_s": 3.0, "stop_reason": "interrupted"}, "the run stopped early (interrupted)"),
        ({"completed": 980, "failed": 20}, "20 of 1000 requests failed (more than 1%)"),
        ({"completed": 0, "failed": 50}, "all 50 requests failed"),
        ({"measured_isl_mean": 900.0}, "measured ISL mean 900.0 tokens is off the intended"),
        ({"measured_osl_mean": 512.0}, "measured OSL mean 512.0 tokens"),
        (
            {"stop_reason": "deadline", "completed": 10},
            "stopped early (deadline): 10 requests finished in 60.00 s; a full point sends "
            "at least 1000 over at least 10 s",
        ),
        ({"client": ClientLoad(event_loop_lag_p99_ms=12.0, cpu_percent=50.0)}, "client saturated"),
        ({"client": ClientLoad(event_loop_lag_p99_ms=1.0, cpu_percent=97.0)}, "CPU 97%"),
    ],
)
def test_each_rule_gives_its_reason(
    rules: ValidityRules, changes: dict[str, object], fragment: str
) -> None:
    reasons = invalid_reasons(rules, _facts(**changes))
    assert any(fragment in r for r in reasons), reasons


def test_late_loop_of_an_idle_client_is_contention_not_saturation(rules: ValidityRules) -> None:
    # A CPU engine on the client's cores delays its loop; the client itself is idle.
    shared = ClientLoad(event_loop_lag_p99_ms=51.0, cpu_percent=1.0)
    assert invalid_reasons(rules, _facts(client=shared)) == []
    assert rules.saturation.contended(shared) and not rules.saturation.saturated(shared)
    busy = ClientLoad(event_loop_lag_p99_ms=51.0, cpu_percent=60.0)
    assert rules.saturation.saturated(busy) and not rules.saturation.contended(busy)


def test_small_failure_fraction_and_template_tokens_are_tolerated(rules: ValidityRules) -> None:
    assert invalid_reasons(rules, _facts(completed=995, failed=5, measured_isl_mean=1070.0)) == []


def test_broken_rules_file_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "v.yaml"
    bad.write_text("source: x\nmin_duration_s: -1\n")
    with pytest.raises(CatalogError, match=r"v.yaml: invalid validity rules"):
        load_rules(bad)
    with pytest.raises(CatalogError, match="cannot read validity rules"):
        load_rules(tmp_path / "missing.yaml")
