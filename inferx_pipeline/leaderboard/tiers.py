"""Throughput per GPU at fixed interactivity tiers, read off each group's Pareto front.

Between two adjacent front points the value is linear in interactivity. A tier above the
front's most interactive point is ``not_reached``; one below its least interactive point is
``below_range`` (the sweep never went that far). Neither is extrapolated: both have NaN
values. Input and output throughput are interpolated the same way, so cost per input and
per output token can be priced at the tier too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np
import pandas as pd

from inferx_pipeline.leaderboard.config import Stat
from inferx_pipeline.leaderboard.frame import GROUP_KEYS
from inferx_pipeline.leaderboard.pareto import THROUGHPUT, interactivity_column

TierStatus = Literal["ok", "not_reached", "below_range"]
INTERPOLATED: tuple[str, ...] = (THROUGHPUT, "input_tput_per_gpu", "output_tput_per_gpu")
# Carried from the bracketing points so a reader can see what the value came from.
_CARRIED: tuple[str, ...] = ("recipe_id", "image_tag", "conc", "config", "official", "simulated")
# Carried when the frame has it (the newest rows do, history does not): the result's hash.
_LINK = "artifact_sha256"


def tier_values(
    front: pd.DataFrame, tiers: tuple[float, ...], stat: Stat, by: tuple[str, ...] = GROUP_KEYS
) -> pd.DataFrame:
    """One row per group x tier: ``tier`` (tok/s/user), the interpolated throughputs
    (tok/s/GPU), ``status``, and ``lo_*``/``hi_*`` columns of the bracketing front points.

    ``front`` is the output of ``pareto.pareto_front`` for the same ``stat`` and ``by``.
    ``official`` is true only when both bracketing points are official.
    """
    x = interactivity_column(stat)
    front = front.reset_index(drop=True)
    carried = [*_CARRIED, _LINK] if _LINK in front.columns else list(_CARRIED)
    points = front[[*INTERPOLATED, *carried]].copy()
    points["x"] = front[x].astype(float)
    # An integer group code keeps merge_asof's `by` cheap and dtype-proof.
    points["group"] = front.groupby(list(by), observed=True, sort=False).ngroup()
    groups = front[list(by)].assign(group=points["group"]).drop_duplicates("group")
    points = points.sort_values("x").reset_index(drop=True)
    queries = groups.merge(pd.DataFrame({"tier": [float(t) for t in tiers]}), how="cross")
    queries = queries.sort_values("tier").reset_index(drop=True)
    lo = _bracket(queries, points, "backward", "lo_")
    hi = _bracket(queries, points, "forward", "hi_")
    merged = pd.concat([queries, lo, hi], axis=1)
    out = _interpolate(merged, stat)
    return out.drop(columns="group").sort_values([*by, "tier"]).reset_index(drop=True)


def scenario_tier_values(
    front: pd.DataFrame,
    tiers_of: Callable[[str], tuple[float, ...]],
    stat: Stat,
    by: tuple[str, ...] = GROUP_KEYS,
) -> pd.DataFrame:
    """``tier_values`` of each scenario's groups at that scenario's tiers (``tiers_of``),
    with a ``scenario`` column: agentic and fixed-length workloads span different ranges."""
    parts = [
        tier_values(part, tiers_of(str(scenario)), stat, by).assign(scenario=str(scenario))
        for scenario, part in front.groupby(front["scenario"].astype(str), sort=True)
    ]
    if not parts:
        return tier_values(front, (), stat, by).assign(scenario=pd.Series(dtype=object))
    return pd.concat(parts, ignore_index=True).sort_values([*by, "tier"]).reset_index(drop=True)


def _bracket(
    queries: pd.DataFrame,
    points: pd.DataFrame,
    direction: Literal["backward", "forward"],
    prefix: str,
) -> pd.DataFrame:
    # merge_asof finds, per group, the nearest front point at or below (backward) or at or
    # above (forward) each tier in one vectorized pass.
    found = pd.merge_asof(
        queries[["tier", "group"]], points, left_on="tier", right_on="x", by="group",
        direction=direction,
    )  # fmt: skip
    return found.drop(columns=["tier", "group"]).add_prefix(prefix)


def _interpolate(merged: pd.DataFrame, stat: Stat) -> pd.DataFrame:
    lo_x, hi_x = merged["lo_x"].to_numpy(float), merged["hi_x"].to_numpy(float)
    tier = merged["tier"].to_numpy(float)
    span = hi_x - lo_x
    with np.errstate(invalid="ignore", divide="ignore"):
        weight = np.where(span > 0, (tier - lo_x) / span, 0.0)
    for column in INTERPOLATED:
        lo_v = merged[f"lo_{column}"].to_numpy(float)
        hi_v = merged[f"hi_{column}"].to_numpy(float)
        merged[column] = lo_v + weight * (hi_v - lo_v)
    status = np.where(np.isnan(hi_x), "not_reached", np.where(np.isnan(lo_x), "below_range", "ok"))
    merged["status"] = status
    merged.loc[status != "ok", list(INTERPOLATED)] = np.nan
    merged["official"] = merged["lo_official"].eq(True) & merged["hi_official"].eq(True)
    merged["simulated"] = merged["lo_simulated"].eq(True) | merged["hi_simulated"].eq(True)
    merged["stat"] = stat
    return merged
