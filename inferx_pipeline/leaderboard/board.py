"""Every leaderboard computation over one result frame, gathered for the site writer.

Pure: result rows + catalog + policy in, frames out. The site and the benchmark both call
``compute_leaderboard``; nothing here touches files or a database.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pandas as pd

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.leaderboard.config import AXES, STATS, Axis, LeaderboardConfig, Stat
from inferx_pipeline.leaderboard.cost import with_costs
from inferx_pipeline.leaderboard.frame import (
    GROUP_KEYS,
    LEADERBOARD_COLUMNS,
    current,
    group_labels,
    history_columns,
    prepare,
)
from inferx_pipeline.leaderboard.history import tier_history
from inferx_pipeline.leaderboard.pareto import interactivity_column, pareto_mask
from inferx_pipeline.leaderboard.rankings import rank_tiers
from inferx_pipeline.leaderboard.regressions import episodes, judged_points
from inferx_pipeline.leaderboard.tiers import scenario_tier_values


@dataclass(frozen=True)
class Leaderboard:
    """The computed leaderboard.

    ``rows``: prepared rows of every image (only the history columns when computed from a
    store read); ``current``: each recipe at its newest image, with costs, a group
    ``label`` and front flags (``front_column``); ``fronts``: per stat, the front rows of
    ``current``; ``e2e_fronts``: the same on the E2E-normalized axis; ``tiers``: tier
    values at the default stat with costs; ``ranked``: reached tier values with ranks;
    ``history``: tier values per recipe and image; ``points`` and ``episodes``: the
    regression verdicts.
    """

    rows: pd.DataFrame
    current: pd.DataFrame
    fronts: dict[Stat, pd.DataFrame]
    e2e_fronts: dict[Stat, pd.DataFrame]
    tiers: pd.DataFrame
    ranked: pd.DataFrame
    history: pd.DataFrame
    points: pd.DataFrame
    episodes: pd.DataFrame

    def fronts_on(self, axis: Axis) -> dict[Stat, pd.DataFrame]:
        """The fronts per stat on interactivity ``axis``."""
        return {"intvty": self.fronts, "e2e_intvty": self.e2e_fronts}[axis]


def front_column(stat: Stat, axis: Axis = "intvty") -> str:
    """Name of the flag column in ``Leaderboard.current`` marking front membership at
    ``stat`` on ``axis``: ``on_front@median``, ``on_e2e_intvty_front@median``."""
    return f"on_front@{stat}" if axis == "intvty" else f"on_{axis}_front@{stat}"


def _labelled(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(label=group_labels(frame))


def compute_leaderboard(
    frame: pd.DataFrame,
    catalog: Catalog,
    config: LeaderboardConfig,
    latest: pd.DataFrame | None = None,
) -> Leaderboard:
    """Fronts, tier values, costs, rankings, history and regressions of ``frame``.

    ``frame`` holds the rows of every image with the ResultRecord columns the leaderboard
    reads; when ``latest`` is given (at least every row of each recipe's newest image, with
    all ``LEADERBOARD_COLUMNS``), ``frame`` needs only ``history_columns`` and ``latest``
    feeds the fronts. Raises LeaderboardError on a missing column; invalid and failed rows
    are dropped first.
    """
    wanted = history_columns(
        (interactivity_column(config.default_stat), *config.regression.metrics)
    )
    rows = prepare(frame, wanted if latest is not None else LEADERBOARD_COLUMNS)
    newest = current(prepare(latest) if latest is not None else rows)
    shown = _labelled(with_costs(newest, catalog))
    fronts: dict[Axis, dict[Stat, pd.DataFrame]] = {axis: {} for axis in AXES}
    for stat, axis in itertools.product(STATS, AXES):
        x = interactivity_column(stat, axis)
        shown[front_column(stat, axis)] = pareto_mask(shown, x)
        front = shown.loc[shown[front_column(stat, axis)]]
        fronts[axis][stat] = front.sort_values([*GROUP_KEYS, x])
    stat = config.default_stat
    tiers = scenario_tier_values(fronts["intvty"][stat], config.tiers_for, stat)
    tiers = _labelled(with_costs(tiers, catalog))
    tiers = tiers.merge(shown[["sku", "vendor"]].drop_duplicates("sku"), on="sku", how="left")
    ranked = rank_tiers(tiers, config.baseline_sku, config.price_tier)
    points = judged_points(rows, config.regression)
    return Leaderboard(
        rows=rows,
        current=shown,
        fronts=fronts["intvty"],
        e2e_fronts=fronts["e2e_intvty"],
        tiers=tiers,
        ranked=ranked,
        history=tier_history(rows, config.tiers_for, stat),
        points=points,
        episodes=episodes(points),
    )
