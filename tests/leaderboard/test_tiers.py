"""Interpolation at interactivity tiers: hand-computed values, no extrapolation either side."""

from __future__ import annotations

import pytest

from inferx_pipeline.leaderboard.frame import prepare
from inferx_pipeline.leaderboard.pareto import pareto_front
from inferx_pipeline.leaderboard.synthetic import frame_from_rows
from inferx_pipeline.leaderboard.tiers import tier_values

POINTS = [(20.0, 1000.0), (40.0, 600.0), (80.0, 200.0)]  # (tok/s/user, tok/s/GPU)


def _values(tiers: tuple[float, ...]) -> dict[float, tuple[float, str]]:
    rows = prepare(frame_from_rows([
        {"conc": 64 // (i + 1), "intvty_median": x, "tput_per_gpu": y,
         "input_tput_per_gpu": y * 0.25, "output_tput_per_gpu": y * 0.75}
        for i, (x, y) in enumerate(POINTS)
    ]))  # fmt: skip
    out = tier_values(pareto_front(rows, "median"), tiers, "median")
    return {
        t: (v, s) for t, v, s in zip(out["tier"], out["tput_per_gpu"], out["status"], strict=True)
    }


def test_linear_between_adjacent_front_points() -> None:
    values = _values((30.0, 50.0, 75.0))
    # 30 lies halfway from (20, 1000) to (40, 600): 800. 50 is a quarter of the way from
    # (40, 600) to (80, 200): 500. 75: 600 - 35/40 * 400 = 250.
    assert values[30.0] == (pytest.approx(800.0), "ok")
    assert values[50.0] == (pytest.approx(500.0), "ok")
    assert values[75.0] == (pytest.approx(250.0), "ok")


def test_exact_front_points_and_range_ends() -> None:
    values = _values((20.0, 40.0, 80.0))
    assert [values[t] for t in (20.0, 40.0, 80.0)] == [(1000.0, "ok"), (600.0, "ok"), (200.0, "ok")]


def test_never_extrapolates() -> None:
    values = _values((10.0, 100.0))
    assert values[100.0][1] == "not_reached"
    assert values[10.0][1] == "below_range"
    assert all(v != v for v, _ in values.values())  # NaN: no number is invented


def test_input_output_interpolated_and_official_needs_both_ends() -> None:
    rows = prepare(frame_from_rows([
        {"conc": 2, "intvty_median": 20.0, "tput_per_gpu": 1000.0,
         "input_tput_per_gpu": 250.0, "output_tput_per_gpu": 750.0},
        {"conc": 1, "intvty_median": 40.0, "tput_per_gpu": 600.0, "input_tput_per_gpu": 150.0,
         "output_tput_per_gpu": 450.0, "official": False, "simulated": True},
    ]))  # fmt: skip
    out = tier_values(pareto_front(rows, "median"), (20.0, 30.0), "median").set_index("tier")
    assert out.loc[30.0, "input_tput_per_gpu"] == pytest.approx(200.0)
    assert out.loc[30.0, "output_tput_per_gpu"] == pytest.approx(600.0)
    assert (out.loc[30.0, "lo_conc"], out.loc[30.0, "hi_conc"]) == (2, 1)
    assert not out.loc[30.0, "official"] and out.loc[30.0, "simulated"]
    assert out.loc[20.0, "official"]
