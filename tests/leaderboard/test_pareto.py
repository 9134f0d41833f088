"""Pareto front membership: dominated points out, ties and duplicates kept, groups apart."""

from __future__ import annotations

import pandas as pd

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.leaderboard.board import compute_leaderboard, front_column
from inferx_pipeline.leaderboard.config import LeaderboardConfig
from inferx_pipeline.leaderboard.frame import prepare
from inferx_pipeline.leaderboard.pareto import pareto_front, pareto_mask
from inferx_pipeline.leaderboard.synthetic import frame_from_rows


def _rows(points: list[tuple[float, float]], **extra: object) -> list[dict[str, object]]:
    return [
        {"conc": i + 1, "intvty_median": x, "tput_per_gpu": y, **extra}
        for i, (x, y) in enumerate(points)
    ]


def test_dominated_points_are_excluded() -> None:
    # (30, 500) is beaten by (40, 600) on both axes; (20, 900) loses to (20, 1000).
    rows = prepare(frame_from_rows(_rows([(20, 1000), (40, 600), (80, 200), (30, 500), (20, 900)])))
    front = pareto_front(rows, "median")
    assert list(zip(front["intvty_median"], front["tput_per_gpu"], strict=True)) == [
        (20, 1000), (40, 600), (80, 200),
    ]  # fmt: skip


def test_exact_duplicates_both_stay_and_equal_x_keeps_only_best_y() -> None:
    rows = prepare(frame_from_rows(_rows([(50, 400), (50, 400), (50, 300), (60, 400)])))
    mask = pareto_mask(rows, "intvty_median")
    # (60, 400) dominates every x=50 point: equal y, larger x.
    assert mask.tolist() == [False, False, False, True]
    rows2 = prepare(frame_from_rows(_rows([(50, 400), (50, 400), (40, 500)])))
    assert pareto_mask(rows2, "intvty_median").tolist() == [True, True, True]


def test_groups_get_separate_fronts() -> None:
    h200 = _rows([(20, 1000), (40, 100)], sku="h200")
    b200 = _rows([(30, 50)], sku="b200")  # dominated by h200's points, but another group
    rows = prepare(frame_from_rows(h200 + b200))
    assert pareto_mask(rows, "intvty_median").tolist() == [True, True, True]


def test_the_statistic_selects_the_interactivity_column() -> None:
    points = [
        {"conc": 1, "intvty_median": 50, "intvty_p99": 10, "tput_per_gpu": 100},
        {"conc": 2, "intvty_median": 40, "intvty_p99": 30, "tput_per_gpu": 90},
    ]
    rows = prepare(frame_from_rows(points))
    assert pareto_front(rows, "median")["conc"].tolist() == [1]
    assert sorted(pareto_front(rows, "p99")["conc"].tolist()) == [1, 2]


def test_empty_and_nan_rows() -> None:
    rows = prepare(frame_from_rows(_rows([(20, 100)])))
    assert pareto_mask(rows.iloc[0:0], "intvty_median").empty
    rows.loc[0, "intvty_p90"] = float("nan")
    assert pareto_mask(rows, "intvty_p90").tolist() == [False]
    assert isinstance(pareto_front(rows, "p90"), pd.DataFrame)


def test_e2e_fronts_are_drawn_on_the_e2e_normalized_axis(
    catalog: Catalog, config: LeaderboardConfig
) -> None:
    # (TPOT interactivity, E2E-normalized interactivity, tok/s/GPU): the second point loses
    # on TPOT interactivity but its requests finish sooner per token (less queueing); the
    # third has no per-request data, so it has no place on the E2E axis.
    points = [(40.0, 10.0, 600.0), (30.0, 20.0, 500.0), (20.0, None, 1000.0)]
    frame = frame_from_rows([
        {"conc": i + 1, "intvty_median": x, "e2e_intvty_median": e2e, "tput_per_gpu": y,
         "artifact_sha256": f"{i:064x}"}
        for i, (x, e2e, y) in enumerate(points)
    ])  # fmt: skip
    board = compute_leaderboard(frame, catalog, config)
    tpot = board.fronts["median"]
    assert sorted(zip(tpot["intvty_median"], tpot["tput_per_gpu"], strict=True)) == [
        (20.0, 1000.0), (40.0, 600.0),
    ]  # fmt: skip
    e2e = board.fronts_on("e2e_intvty")["median"]
    assert sorted(zip(e2e["e2e_intvty_median"], e2e["tput_per_gpu"], strict=True)) == [
        (10.0, 600.0), (20.0, 500.0),
    ]  # fmt: skip
    assert board.current[front_column("median", "e2e_intvty")].sum() == 2
