"""Cost per million tokens, tokens per dollar and energy, against the catalog's own numbers."""

from __future__ import annotations

import numpy as np
import pytest

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.leaderboard.cost import (
    cost_column,
    tokens_per_dollar_column,
    usd_per_million,
    with_costs,
)
from inferx_pipeline.leaderboard.synthetic import frame_from_rows


def test_hand_computed_h200_costs(catalog: Catalog) -> None:
    rows = frame_from_rows([{
        "sku": "h200", "tput_per_gpu": 1000.0, "input_tput_per_gpu": 200.0,
        "output_tput_per_gpu": 800.0,
    }])  # fmt: skip
    out = with_costs(rows, catalog).iloc[0]
    on_demand = catalog.prices.price("h200", "on-demand")  # $/GPU-hr from prices.yaml
    assert on_demand == 3.79
    # 1000 tok/s/GPU = 3.6 M tokens per GPU-hour -> 3.79 / 3.6 $/M.
    assert out[cost_column("total", "on-demand")] == pytest.approx(3.79 / 3.6)
    assert out[cost_column("input", "on-demand")] == pytest.approx(3.79 / 0.72)
    assert out[cost_column("output", "on-demand")] == pytest.approx(3.79 / 2.88)
    assert out[cost_column("total", "reserved-1y")] == pytest.approx(2.60 / 3.6)
    assert out[tokens_per_dollar_column("on-demand")] == pytest.approx(3.6e6 / 3.79)
    # h200 board power 0.70 kW: 700 J/s over 1000 tok/s; 1000 tok/s per 0.7 kW.
    assert out["j_per_token"] == pytest.approx(0.7)
    assert out["tok_s_per_mw"] == pytest.approx(1000.0 / 0.7 * 1000.0)


def test_unpriced_sku_and_zero_throughput_are_nan_not_errors(catalog: Catalog) -> None:
    rows = frame_from_rows([{"sku": "no-such-gpu"}, {"sku": "h100", "tput_per_gpu": 0.0}])
    out = with_costs(rows, catalog)
    assert np.isnan(out[cost_column("total", "on-demand")]).all()
    assert np.isnan(out.loc[0, "j_per_token"])
    assert np.isnan(usd_per_million(np.array([1.0]), np.array([-5.0])))[0]
