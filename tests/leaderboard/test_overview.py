"""The overview's headline rows: every group at its workload kind's headline tier, a missed
tier worded with the front's span, agentic workloads at their own tiers."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd
import pytest

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.leaderboard.board import compute_leaderboard
from inferx_pipeline.leaderboard.build import build_site
from inferx_pipeline.leaderboard.config import LeaderboardConfig
from inferx_pipeline.leaderboard.frame import prepare
from inferx_pipeline.leaderboard.overview import headline_values, reach_note
from inferx_pipeline.leaderboard.pareto import pareto_front
from inferx_pipeline.leaderboard.synthetic import frame_from_rows
from inferx_pipeline.leaderboard.tiers import scenario_tier_values
from tests.leaderboard.conftest import GENERATED_AT

AGENTIC = {"scenario": "agentic-coding", "isl": None, "osl": None}


def _group(sku: str, xs: tuple[float, ...], **identity: object) -> list[dict[str, object]]:
    """A front of ``xs`` (tok/s/user): throughput falls as interactivity rises."""
    return [
        {"sku": sku, "recipe_id": f"{sku}-{identity.get('scenario', 'fixed')}",
         "conc": 2**i, "intvty_median": x, "tput_per_gpu": 10_000.0 / x,
         "artifact_sha256": hashlib.sha256(f"{sku}{identity}{x}".encode()).hexdigest(),
         **identity}
        for i, x in enumerate(sorted(xs, reverse=True))
    ]  # fmt: skip


def _frame() -> pd.DataFrame:
    return frame_from_rows([
        *_group("h200", (12.0, 25.0, 38.0)),  # under the 50 tok/s/user headline
        *_group("b200", (40.0, 60.0, 80.0)),  # brackets it
        *_group("mi300x", (120.0, 250.0)),  # above: the sweep never loaded it down to 50
        *_group("h200", (12.0, 25.0, 38.0), **AGENTIC),  # agentic headline 20: reached
    ])  # fmt: skip


def _headlines(catalog: Catalog, config: LeaderboardConfig) -> pd.DataFrame:
    board = compute_leaderboard(_frame(), catalog, config)
    heads = headline_values(
        board.tiers, board.fronts["median"], "intvty_median", config.headline_for
    )
    return heads.set_index(["workload", "sku"])


def test_every_group_has_a_headline_row_and_a_miss_names_the_front_span(
    catalog: Catalog, config: LeaderboardConfig
) -> None:
    heads = _headlines(catalog, config)
    fixed, agentic = "fixed-seq-len 1k/1k", "agentic-coding"
    assert set(heads.index) == {
        (fixed, "h200"), (fixed, "b200"), (fixed, "mi300x"), (agentic, "h200"),
    }  # fmt: skip
    assert heads.loc[(fixed, "h200"), "note"] == "not reached (front spans 12-38 tok/s/user)"
    assert heads.loc[(fixed, "mi300x"), "note"] == "below range (front spans 120-250 tok/s/user)"
    assert heads.loc[(fixed, "b200"), ["status", "note"]].tolist() == ["ok", ""]
    # Interpolated halfway between (40, 250) and (60, 166.7) tok/s/GPU.
    assert heads.loc[(fixed, "b200"), "tput_per_gpu"] == pytest.approx((250 + 10_000 / 60) / 2)
    assert heads.loc[(agentic, "h200"), ["tier", "status"]].tolist() == [20.0, "ok"]
    assert heads.loc[(fixed, "h200"), "tier"] == 50.0


def test_agentic_groups_get_their_scenario_tiers(config: LeaderboardConfig) -> None:
    front = pareto_front(prepare(_frame()), "median")
    values = scenario_tier_values(front, config.tiers_for, "median")
    tiers = values.groupby("scenario")["tier"].apply(lambda t: tuple(sorted(set(t))))
    assert tiers["agentic-coding"] == config.tiers_for("agentic-coding") != config.tiers
    assert tiers["fixed-seq-len"] == config.tiers
    assert scenario_tier_values(front.iloc[0:0], config.tiers_for, "median").empty


@pytest.mark.parametrize(
    ("status", "lo", "hi", "note"),
    [
        ("ok", 1.0, 2.0, ""),
        ("not_reached", 2.25, 9.5, "not reached (front spans 2.2-9.5 tok/s/user)"),
        ("below_range", 150.4, 900.6, "below range (front spans 150-901 tok/s/user)"),
        ("not_reached", float("nan"), float("nan"), "not reached"),
    ],
)
def test_reach_note(status: str, lo: float, hi: float, note: str) -> None:
    assert reach_note(status, lo, hi) == note


def test_the_overview_lists_every_model_and_workload(
    catalog: Catalog, config: LeaderboardConfig, tmp_path: Path
) -> None:
    frame = pd.concat(
        [_frame(), frame_from_rows(_group("h100", (5.0, 8.0), model="other/Model-B"))],
        ignore_index=True,
    )
    build_site(frame, tmp_path / "site", catalog, config, generated_at=GENERATED_AT)
    html = (tmp_path / "site" / "index.html").read_text()
    assert html.count('<section class="ranking"') == 3
    assert 'data-model="other/Model-B" data-workload="fixed-seq-len 1k/1k"' in html
    assert "No configuration reaches the headline tier." in html  # Model-B: 5-8 tok/s/user
    assert "h100 · vllm · fp8: not reached (front spans 5.0-8.0 tok/s/user)" in html
    assert "h200 · vllm · fp8: not reached (front spans 12-38 tok/s/user)" in html
    assert "Headline tier: <strong>20 tok/s/user</strong>" in html
