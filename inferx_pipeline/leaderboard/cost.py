"""Dollars and energy per token, from the catalog's price tiers and per-GPU power.

cost per million tokens ($/M) = ($/GPU-hr) / (tok/s/GPU x 3600 / 1e6), for total, input and
output tokens at every price tier of ``catalog/prices.yaml``; tokens per dollar is its
inverse x 1e6. Energy: J/token = (kW/GPU x 1000) / (tok/s/GPU); tok/s per MW =
(tok/s/GPU) / (kW/GPU) x 1000. A SKU without a price (or without a catalog entry) gets NaN
in those columns rather than failing the whole leaderboard.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from inferx_pipeline.catalog import Catalog

TOKEN_KINDS: dict[str, str] = {
    "total": "tput_per_gpu",
    "input": "input_tput_per_gpu",
    "output": "output_tput_per_gpu",
}
_SECONDS_PER_HOUR = 3600.0
_PER_MILLION = 1e6


def cost_column(kind: str, price_tier: str) -> str:
    """Column name of $/M ``kind`` tokens at ``price_tier``, e.g. ``usd_per_m_total@on-demand``."""
    return f"usd_per_m_{kind}@{price_tier}"


def tokens_per_dollar_column(price_tier: str) -> str:
    """Column name of total tokens per dollar at ``price_tier``."""
    return f"tokens_per_usd@{price_tier}"


def usd_per_million(usd_per_gpu_hour: np.ndarray, tok_s_per_gpu: np.ndarray) -> np.ndarray:
    """$/M tokens; NaN where throughput is not positive or the price is unknown."""
    per_hour_m = np.asarray(tok_s_per_gpu, float) * _SECONDS_PER_HOUR / _PER_MILLION
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(per_hour_m > 0, np.asarray(usd_per_gpu_hour, float) / per_hour_m, np.nan)


def with_costs(rows: pd.DataFrame, catalog: Catalog) -> pd.DataFrame:
    """``rows`` (with ``sku`` and the three throughput columns) plus cost and energy columns.

    Adds ``cost_column(kind, tier)`` for every kind and price tier,
    ``tokens_per_dollar_column(tier)``, ``j_per_token`` and ``tok_s_per_mw``. Pure: returns a
    new frame.
    """
    out = rows.copy()
    sku = out["sku"].astype(str)
    for tier in catalog.prices.tiers:
        prices = {s: p[tier] for s, p in catalog.prices.prices.items() if tier in p}
        price_values = sku.map(prices).to_numpy(float)
        for kind, column in TOKEN_KINDS.items():
            out[cost_column(kind, tier)] = usd_per_million(price_values, out[column].to_numpy())
        total_cost = out[cost_column("total", tier)].to_numpy(float)
        out[tokens_per_dollar_column(tier)] = _PER_MILLION / total_cost
    kw = sku.map({s.id: s.kw for s in catalog.skus.values()}).to_numpy(float)
    tput = out["tput_per_gpu"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["j_per_token"] = np.where(tput > 0, kw * 1000.0 / tput, np.nan)
        out["tok_s_per_mw"] = tput / kw * 1000.0
    return out
