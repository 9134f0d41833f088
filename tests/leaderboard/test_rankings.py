"""Rankings at a tier: fastest, cheapest, and percent against the baseline SKU."""

from __future__ import annotations

import pytest

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.leaderboard.cost import cost_column, with_costs
from inferx_pipeline.leaderboard.frame import group_labels, prepare
from inferx_pipeline.leaderboard.pareto import pareto_front
from inferx_pipeline.leaderboard.rankings import podium, rank_tiers
from inferx_pipeline.leaderboard.synthetic import frame_from_rows
from inferx_pipeline.leaderboard.tiers import tier_values


def _ranked(catalog: Catalog):  # type: ignore[no-untyped-def]  # a test helper
    # Fronts from (20, T) to (80, T/2): the value at 50 tok/s/user is 0.75 T.
    per_sku = {"h200": 1000.0, "b200": 1500.0, "mi300x": 900.0, "h100": 2000.0}
    rows = []
    for sku, tput in per_sku.items():
        for conc, x, y in ((1, 80.0, tput / 2), (2, 20.0, tput)):
            rows.append({"sku": sku, "conc": conc, "intvty_median": x, "tput_per_gpu": y})
    rows.append({"sku": "b300", "conc": 1, "intvty_median": 10.0, "tput_per_gpu": 9999.0})
    prepared = prepare(frame_from_rows(rows))
    tiers = with_costs(tier_values(pareto_front(prepared, "median"), (50.0,), "median"), catalog)
    tiers["label"] = group_labels(tiers)
    return rank_tiers(tiers, "h200", "on-demand")


def test_speed_cost_and_baseline(catalog: Catalog) -> None:
    ranked = _ranked(catalog).set_index("sku")
    assert "b300" not in ranked.index  # never reaches 50 tok/s/user: not ranked
    assert ranked["speed_rank"].to_dict() == {"h100": 1, "b200": 2, "h200": 3, "mi300x": 4}
    assert ranked.loc["b200", "pct_vs_baseline"] == pytest.approx(50.0)
    assert ranked.loc["mi300x", "pct_vs_baseline"] == pytest.approx(-10.0)
    assert ranked.loc["h100", "tput_per_gpu"] == pytest.approx(1500.0)
    # $/M at on-demand: h100 2.99/5.4, mi300x 2.49/2.43, b200 5.99/4.05, h200 3.79/2.7.
    cost = ranked[cost_column("total", "on-demand")]
    assert cost["h100"] == pytest.approx(2.99 / 5.4)
    assert ranked["cost_rank"].to_dict() == {"h100": 1, "mi300x": 2, "h200": 3, "b200": 4}


def test_podium_names_fastest_and_cheapest(catalog: Catalog) -> None:
    top = podium(_ranked(catalog), 50.0, "on-demand").iloc[0]
    assert top["fastest_sku"] == "h100"
    assert top["cheapest_sku"] == "h100"
    assert top["fastest_pct_vs_baseline"] == pytest.approx(100.0)


def test_missing_baseline_gives_nan(catalog: Catalog) -> None:
    ranked = _ranked(catalog)
    tiers = ranked.drop(columns=["speed_rank", "cost_rank", "baseline_tput_per_gpu"])
    again = rank_tiers(tiers.drop(columns=["pct_vs_baseline"]), "gb300", "on-demand")
    assert again["pct_vs_baseline"].isna().all()
