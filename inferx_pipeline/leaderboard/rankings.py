"""Rankings at each interactivity tier: fastest, cheapest, and % against a baseline SKU.

Ranked within (model, workload, tier) over groups whose tier value exists (status ``ok``).
The baseline of a ranking is the best throughput any group on the baseline SKU reaches at
that tier; where the baseline SKU has no value, ``pct_vs_baseline`` is NaN.
"""

from __future__ import annotations

import pandas as pd

from inferx_pipeline.leaderboard.cost import cost_column
from inferx_pipeline.leaderboard.frame import PAGE_KEYS
from inferx_pipeline.leaderboard.pareto import THROUGHPUT

RANK_KEYS: tuple[str, ...] = (*PAGE_KEYS, "tier")


def rank_tiers(priced_tiers: pd.DataFrame, baseline_sku: str, price_tier: str) -> pd.DataFrame:
    """Reached tier values with ``speed_rank`` (1 = most tok/s/GPU), ``cost_rank`` (1 =
    fewest $ per M total tokens at ``price_tier``) and ``pct_vs_baseline`` (percent more
    tok/s/GPU than ``baseline_sku``'s best at the same model, workload and tier).

    ``priced_tiers`` is ``cost.with_costs(tiers.tier_values(...))``. Ties share the lower rank.
    """
    ok = priced_tiers.loc[priced_tiers["status"] == "ok"].copy()
    keys = list(RANK_KEYS)
    grouped = ok.groupby(keys, observed=True)
    ok["speed_rank"] = grouped[THROUGHPUT].rank(ascending=False, method="min").astype(int)
    cost = cost_column("total", price_tier)
    ok["cost_rank"] = grouped[cost].rank(ascending=True, method="min").astype("Int64")
    base = (
        ok.loc[ok["sku"].astype(str) == baseline_sku]
        .groupby(keys, observed=True)[THROUGHPUT]
        .max()
        .rename("baseline_tput_per_gpu")
    )
    ok = ok.merge(base, left_on=keys, right_index=True, how="left")
    ok["pct_vs_baseline"] = (ok[THROUGHPUT] / ok["baseline_tput_per_gpu"] - 1.0) * 100.0
    return ok.sort_values([*keys, "speed_rank"]).reset_index(drop=True)


def podium(ranked: pd.DataFrame, tier: float, price_tier: str) -> pd.DataFrame:
    """Per (model, workload) at ``tier``: the fastest group and the cheapest group.

    Columns: the page keys, ``fastest_*`` and ``cheapest_*`` (sku, framework, precision,
    spec_method, tput_per_gpu, cost, pct_vs_baseline, badge-relevant ``official``).
    """
    at_tier = ranked.loc[ranked["tier"] == float(tier)]
    cost = cost_column("total", price_tier)
    shown = ["sku", "framework", "precision", "spec_method", THROUGHPUT, cost]
    shown += ["pct_vs_baseline", "official", "simulated"]
    keys = list(PAGE_KEYS)
    fastest = at_tier.sort_values(THROUGHPUT, ascending=False).drop_duplicates(keys)
    cheapest = at_tier.dropna(subset=[cost]).sort_values(cost).drop_duplicates(keys)
    return (
        fastest[[*keys, *shown]]
        .add_prefix("fastest_")
        .rename(columns={f"fastest_{k}": k for k in keys})
        .merge(
            cheapest[[*keys, *shown]]
            .add_prefix("cheapest_")
            .rename(columns={f"cheapest_{k}": k for k in keys}),
            on=keys,
            how="left",
        )
        .sort_values(keys)
        .reset_index(drop=True)
    )
