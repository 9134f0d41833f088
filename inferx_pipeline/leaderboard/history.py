"""A recipe's tier values over its image tags: the series the history pages draw.

Images are ordered by when they were first measured for the recipe (the results carry no
image build date); a backfill of an old tag therefore appears where it was run.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from inferx_pipeline.leaderboard.config import Stat
from inferx_pipeline.leaderboard.pareto import pareto_front
from inferx_pipeline.leaderboard.tiers import scenario_tier_values

HISTORY_KEYS: tuple[str, ...] = ("recipe_id", "sku", "workload", "image_tag")


def image_order(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (recipe, image tag): ``image_time`` (first start, UTC), ``image_rank`` (0 = oldest)."""
    first = (
        rows.groupby(["recipe_id", "image_tag"], observed=True)["started_at"]
        .min()
        .rename("image_time")
        .reset_index()
        .sort_values(["recipe_id", "image_time", "image_tag"])
    )
    first["image_rank"] = first.groupby("recipe_id", observed=True).cumcount()
    return first.reset_index(drop=True)


def tier_history(
    rows: pd.DataFrame, tiers_of: Callable[[str], tuple[float, ...]], stat: Stat
) -> pd.DataFrame:
    """Tier values (tok/s/GPU) per recipe, SKU, workload, image tag and tier, oldest first.

    ``rows`` is a prepared frame over all images (not only ``frame.current``); ``tiers_of``
    gives each scenario's tiers (tok/s/user). Each image's
    value comes from the front of that image's own points; ``status`` says when a tier was
    not reached.
    """
    if rows.empty:
        return pd.DataFrame(columns=[*HISTORY_KEYS, "tier", "tput_per_gpu", "status"])
    # A rerun of the same point on the same image keeps its newest attempt.
    point = [*HISTORY_KEYS, "config", "conc"]
    latest = rows.sort_values(["finished_at", "attempt"]).drop_duplicates(point, keep="last")
    front = pareto_front(latest, stat, by=HISTORY_KEYS)
    values = scenario_tier_values(front, tiers_of, stat, by=HISTORY_KEYS)
    ordered = values.merge(image_order(rows), on=["recipe_id", "image_tag"])
    keep = [*HISTORY_KEYS, "image_time", "image_rank", "tier", "tput_per_gpu", "status"]
    return ordered.sort_values(["recipe_id", "workload", "tier", "image_rank"])[keep].reset_index(
        drop=True
    )
