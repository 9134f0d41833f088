"""An unofficial run against its baseline: which official point each PR point meets, the
deltas per point, the fronts' deltas at the tiers, and the points that are not compared."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pytest

from inferx_pipeline.errors import LeaderboardError
from inferx_pipeline.leaderboard.compare import RunComparison, compare_run
from inferx_pipeline.leaderboard.config import LeaderboardConfig
from inferx_pipeline.leaderboard.pr_report import state_text
from inferx_pipeline.leaderboard.synthetic import frame_from_rows

T0 = datetime(2026, 3, 1, tzinfo=UTC)
PR = {"run_id": "pr-run", "pr_number": 7, "head_sha": "c0ffee" + "0" * 34, "official": False,
      "image": "vllm/vllm-openai:v3", "image_tag": "v3"}  # fmt: skip
AGENTIC = {"scenario": "agentic-coding", "isl": None, "osl": None}


def sha(*parts: object) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def point(conc: int, x: float, y: float, **over: Any) -> dict[str, Any]:
    """A row at concurrency ``conc``: ``x`` tok/s/user, ``y`` tok/s/GPU (distinct ids)."""
    row = {
        "conc": conc, "intvty_median": x, "tput_per_gpu": y, "output_tput_per_gpu": y / 2,
        "input_tput_per_gpu": y / 2, "ttft_median_s": 0.01 * conc,
        "tpot_median_s": 1 / x if x else None, **over,
    }  # fmt: skip
    row["result_id"] = row["artifact_sha256"] = sha(sorted(row.items(), key=str))
    return row


def official(image: str, day: int, xs_ys: list[tuple[float, float]], **over: Any) -> list[dict]:  # type: ignore[type-arg]  # rows
    tag = image.rsplit(":", 1)[1]
    return [
        point(2**i, x, y, image=image, image_tag=tag, run_id=f"run-{tag}",
              finished_at=T0 + timedelta(days=day), **over)
        for i, (x, y) in enumerate(xs_ys)
    ]  # fmt: skip


FRONT = [(80.0, 200.0), (40.0, 600.0), (20.0, 1000.0)]  # conc 1, 2, 4
PR_FRONT = [(80.0, 300.0), (40.0, 700.0), (20.0, 1100.0)]


@pytest.fixture(scope="module")
def baseline() -> pd.DataFrame:
    return frame_from_rows([
        *official("vllm/vllm-openai:v1", 1, [(90.0, 150.0), (45.0, 500.0), (22.0, 900.0)]),
        *official("vllm/vllm-openai:v2", 2, FRONT),  # the newest image: the baseline
        # Another configuration of the recipe that the PR does not sweep, far better.
        *official("vllm/vllm-openai:v2", 2, [(80.0, 5000.0), (40.0, 6000.0)], tp=4, gpus=4),
        # Another workload: never a baseline of a 1k/1k point.
        *official("vllm/vllm-openai:v2", 2, FRONT, isl=8192),
        # Another recipe, the one a PR may name as its baseline.
        *official("sglang/sglang:v9", 2, [(80.0, 100.0), (40.0, 300.0)], recipe_id="recipe-b"),
        *official("sglang/sglang:v9", 2, [(20.0, 400.0)], recipe_id="recipe-b", tp=4, gpus=4),
    ])  # fmt: skip


def pr_rows(*extra: dict[str, Any]) -> pd.DataFrame:
    rows = [point(2**i, x, y, **PR) for i, (x, y) in enumerate(PR_FRONT)]
    return frame_from_rows([*rows, *extra])


def run(
    pr: pd.DataFrame, base: pd.DataFrame, config: LeaderboardConfig, named: str | None = None
) -> RunComparison:
    return compare_run(pr, base, config.tier_set, "median", named)


def by_conc(comparison: RunComparison) -> dict[tuple[str, int], Any]:
    return {(p.config, p.conc): p for p in comparison.points}


def test_a_point_meets_the_newest_official_point_of_its_config_and_concurrency(
    baseline: pd.DataFrame, config: LeaderboardConfig
) -> None:
    pr = pr_rows()
    found = by_conc(run(pr, baseline, config))
    newest = baseline[(baseline["image_tag"] == "v2") & (baseline["tp"] == 8)
                      & (baseline["isl"] == 1024)
                      & (baseline["recipe_id"] == "recipe-a")]  # fmt: skip
    for conc in (1, 2, 4):
        mine, theirs = found[("tp8", conc)], newest.set_index("conc").loc[conc]
        ours = pr.set_index("conc").loc[conc]
        assert mine.state == "compared"
        assert mine.pr.result_id == ours["result_id"]
        assert mine.baseline is not None and mine.baseline.result_id == theirs["result_id"]
        assert (mine.pr.image, mine.baseline.image) == (ours["image"], theirs["image"])
        tput = mine.changes["tput_per_gpu"]
        assert (tput.pr, tput.baseline) == (ours["tput_per_gpu"], theirs["tput_per_gpu"])
        assert tput.delta == pytest.approx(ours["tput_per_gpu"] - theirs["tput_per_gpu"])
        assert tput.pct == pytest.approx(100 * tput.delta / theirs["tput_per_gpu"])
        assert mine.changes["tpot_s"].baseline == theirs["tpot_median_s"]
        assert mine.changes["ttft_s"].pr == ours["ttft_median_s"]
        assert mine.changes["intvty"].pr == ours["intvty_median"]
        assert mine.changes["output_tput_per_gpu"].baseline == theirs["output_tput_per_gpu"]


def test_workload_config_and_concurrency_must_all_match(
    baseline: pd.DataFrame, config: LeaderboardConfig
) -> None:
    pr = pr_rows(
        point(8, 10.0, 1200.0, **PR),  # no official conc 8
        point(1, 80.0, 5500.0, tp=4, gpus=4, **PR),  # tp4 meets tp4, not tp8
        point(1, 80.0, 300.0, tp=2, gpus=2, **PR),  # no official tp2
        point(1, 80.0, 300.0, **PR | AGENTIC),  # no official agentic point
    )
    found = by_conc(run(pr, baseline, config))
    assert found[("tp8", 8)].state == found[("tp2", 1)].state == "no_baseline"
    assert found[("tp8", 8)].baseline is None and found[("tp8", 8)].changes == {}
    tp4 = found[("tp4", 1)]
    assert tp4.state == "compared" and tp4.changes["tput_per_gpu"].baseline == 5000.0
    agentic = [p for p in run(pr, baseline, config).points if p.workload == "agentic-coding"]
    assert [p.state for p in agentic] == ["no_baseline"]


def test_a_named_baseline_recipe_replaces_the_own_one(
    baseline: pd.DataFrame, config: LeaderboardConfig
) -> None:
    comparison = run(pr_rows(), baseline, config, named="recipe-b")
    found = by_conc(comparison)
    assert found[("tp8", 1)].baseline is not None
    assert found[("tp8", 1)].baseline.recipe_id == "recipe-b"
    assert found[("tp8", 1)].changes["tput_per_gpu"].baseline == 100.0
    assert found[("tp8", 4)].state == "no_baseline"  # recipe-b has no tp8 conc 4
    [base] = comparison.baselines
    assert (base.recipe_id, base.baseline_recipe_id, base.named) == ("recipe-a", "recipe-b", True)
    assert base.image == "sglang/sglang:v9"
    # A named recipe's front is all its configurations: its tp4 point reaches 30 tok/s/user.
    at30 = next(t for t in comparison.tiers if t.tier == 30.0)
    assert at30.baseline_recipe_id == "recipe-b"
    assert at30.baseline.tput_per_gpu == pytest.approx(350.0)  # (20, 400) to (40, 300)


def test_failed_and_invalid_points_are_listed_not_compared(
    baseline: pd.DataFrame, config: LeaderboardConfig
) -> None:
    pr = pr_rows(
        point(8, 0.0, 0.0, status="failed", **PR),
        point(16, 0.0, 0.0, status="incomplete", **PR),
        point(32, 10.0, 1.0, status="invalid", valid=False, **PR),
    )
    comparison = run(pr, baseline, config)
    found = by_conc(comparison)
    assert [found[("tp8", c)].state for c in (8, 16, 32)] == ["failed", "failed", "invalid"]
    assert found[("tp8", 16)].pr.status == "incomplete"
    assert all(found[("tp8", c)].baseline is None for c in (8, 16, 32))
    assert (comparison.count("compared"), comparison.count("failed")) == (3, 2)


def test_the_newest_good_attempt_of_a_point_counts(
    baseline: pd.DataFrame, config: LeaderboardConfig
) -> None:
    retried = point(1, 80.0, 350.0, attempt=2, **PR)
    taken = point(2, 40.0, 600.0, attempt=2, measured_in="run-v2", **PR)
    pr = pr_rows(point(1, 0.0, 0.0, status="failed", attempt=3, **PR), retried, taken)
    found = by_conc(run(pr, baseline, config))
    assert found[("tp8", 1)].state == "compared"
    assert found[("tp8", 1)].pr.result_id == retried["result_id"]
    # A point the run took over from the official run: the same measurement, delta 0.
    reused = found[("tp8", 2)]
    assert (reused.pr.measured_in, reused.changes["tput_per_gpu"].delta) == ("run-v2", 0.0)
    assert state_text(reused) == "compared (reused)"


def test_tier_deltas_read_both_fronts_of_the_same_configurations(
    baseline: pd.DataFrame, config: LeaderboardConfig
) -> None:
    comparison = run(pr_rows(), baseline, config)
    tiers = {t.tier: t for t in comparison.tiers if t.workload == "fixed-seq-len 1k/1k"}
    assert sorted(tiers) == [30.0, 50.0, 75.0, 100.0]
    assert [t for t, row in tiers.items() if row.headline] == [50.0]
    # Linear between front points: 30 is halfway from (20, 1000) to (40, 600); the tp4
    # points the PR did not sweep are not in the baseline front.
    want = {30.0: (800.0, 900.0), 50.0: (500.0, 600.0), 75.0: (250.0, 350.0)}
    for tier, (base, ours) in want.items():
        row = tiers[tier]
        assert (row.baseline.state, row.pr.state) == ("ok", "ok")
        assert row.baseline.tput_per_gpu == pytest.approx(base)
        assert row.pr.tput_per_gpu == pytest.approx(ours)
        assert row.change.delta == pytest.approx(ours - base)
        assert row.change.pct == pytest.approx(100 * (ours - base) / base)
    assert tiers[100.0].pr.state == tiers[100.0].baseline.state == "not_reached"
    assert tiers[100.0].change.delta is None
    pr = pr_rows().set_index("conc")
    assert (tiers[30.0].pr.lo_result_id, tiers[30.0].pr.hi_result_id) == (
        pr.loc[4, "result_id"], pr.loc[2, "result_id"],
    )  # fmt: skip


def test_a_side_without_points_has_no_tier_values(
    baseline: pd.DataFrame, config: LeaderboardConfig
) -> None:
    failed = frame_from_rows([point(1, 0.0, 0.0, status="failed", **PR)])
    tiers = run(failed, baseline, config).tiers
    assert {t.pr.state for t in tiers} == {"none"}
    assert {t.baseline.state for t in tiers} == {"ok", "not_reached"}
    fresh = frame_from_rows([point(1, 40.0, 600.0, **PR | {"recipe_id": "new-recipe"})])
    comparison = run(fresh, baseline, config)
    assert {t.baseline.state for t in comparison.tiers} == {"none"}
    assert comparison.baselines[0].image is None


def test_agentic_workloads_are_read_at_their_own_tiers(
    baseline: pd.DataFrame, config: LeaderboardConfig
) -> None:
    agentic = frame_from_rows([point(1, 30.0, 100.0, **PR | AGENTIC)])
    tiers = run(agentic, baseline, config).tiers
    assert [(t.tier, t.headline) for t in tiers] == [(10, False), (20, True), (40, False),
                                                     (60, False)]  # fmt: skip


def test_rows_of_a_pull_request_never_serve_as_baseline(
    baseline: pd.DataFrame, config: LeaderboardConfig
) -> None:
    other_pr = [point(8, 10.0, 1.0, **PR | {"run_id": "other", "pr_number": 9})]
    mixed = pd.concat([baseline, frame_from_rows(other_pr)], ignore_index=True)
    pr = pr_rows(point(8, 10.0, 1200.0, **PR))
    assert by_conc(run(pr, mixed, config))[("tp8", 8)].state == "no_baseline"


def test_rows_of_two_runs_or_a_missing_column_are_refused(
    baseline: pd.DataFrame, config: LeaderboardConfig
) -> None:
    two = pr_rows(point(8, 10.0, 1.0, **PR | {"run_id": "another"}))
    with pytest.raises(LeaderboardError, match=r"rows of 2 runs \(another, pr-run\)"):
        run(two, baseline, config)
    with pytest.raises(LeaderboardError, match=r"missing columns tpot_median_s"):
        run(pr_rows(), baseline.drop(columns="tpot_median_s"), config)


def test_an_empty_run_compares_nothing(baseline: pd.DataFrame, config: LeaderboardConfig) -> None:
    comparison = run(pr_rows().iloc[0:0], baseline, config)
    assert comparison.points == comparison.tiers == comparison.baselines == ()
