"""Every leaderboard computation over one result frame, gathered for the site writer.

Pure: result rows + catalog + policy in, frames out; nothing here touches files or a
database. Two halves share nothing but their input: ``current_board`` (what each recipe's
newest image shows) and ``history_board`` (every image over time), so the site build can
compute them side by side; ``compute_leaderboard`` gives both as one ``Leaderboard``.
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
class CurrentBoard:
    """What each recipe's newest image shows.

    ``current``: each recipe at its newest image, with costs, a group ``label`` and front
    flags (``front_column``); ``fronts``: per stat, the front rows of ``current``;
    ``e2e_fronts``: the same on the E2E-normalized axis; ``tiers``: tier values at the
    default stat with costs; ``ranked``: reached tier values with ranks.
    """

    current: pd.DataFrame
    fronts: dict[Stat, pd.DataFrame]
    e2e_fronts: dict[Stat, pd.DataFrame]
    tiers: pd.DataFrame
    ranked: pd.DataFrame

    def fronts_on(self, axis: Axis) -> dict[Stat, pd.DataFrame]:
        """The fronts per stat on interactivity ``axis``."""
        return {"intvty": self.fronts, "e2e_intvty": self.e2e_fronts}[axis]


@dataclass(frozen=True)
class HistoryBoard:
    """What every image's rows show over time.

    ``rows``: prepared rows of every image (only the history columns when computed from a
    store read); ``history``: tier values per recipe and image; ``episodes``: the
    regressions found (``regressions.episodes``).
    """

    rows: pd.DataFrame
    history: pd.DataFrame
    episodes: pd.DataFrame


@dataclass(frozen=True)
class Leaderboard(CurrentBoard, HistoryBoard):
    """The computed leaderboard: both halves, which depend on nothing of each other (the
    site build computes them side by side)."""


def front_column(stat: Stat, axis: Axis = "intvty") -> str:
    """Name of the flag column in ``Leaderboard.current`` marking front membership at
    ``stat`` on ``axis``: ``on_front@median``, ``on_e2e_intvty_front@median``."""
    return f"on_front@{stat}" if axis == "intvty" else f"on_{axis}_front@{stat}"


def _labelled(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(label=group_labels(frame))


def board_rows(
    frame: pd.DataFrame, config: LeaderboardConfig, latest: pd.DataFrame | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(rows, newest)``: ``frame`` prepared (``HistoryBoard.rows``) and the rows each
    recipe shows at its newest image (``current_board``'s input).

    ``frame`` and ``latest`` are as for ``compute_leaderboard``. Raises LeaderboardError on
    a missing column; invalid and failed rows are dropped.
    """
    wanted = history_columns(
        (interactivity_column(config.default_stat), *config.regression.metrics)
    )
    rows = prepare(frame, wanted if latest is not None else LEADERBOARD_COLUMNS)
    return rows, current(prepare(latest) if latest is not None else rows)


def current_board(
    newest: pd.DataFrame, catalog: Catalog, config: LeaderboardConfig
) -> CurrentBoard:
    """Fronts, tier values, costs and rankings of ``newest`` (``board_rows``)."""
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
    return CurrentBoard(
        current=shown,
        fronts=fronts["intvty"],
        e2e_fronts=fronts["e2e_intvty"],
        tiers=tiers,
        ranked=rank_tiers(tiers, config.baseline_sku, config.price_tier),
    )


def history_board(rows: pd.DataFrame, config: LeaderboardConfig) -> HistoryBoard:
    """Tier history and regression verdicts of ``rows`` (``board_rows``)."""
    # The small tier history first: its working copies are gone before the verdicts are
    # made, and of those only the flagged series' points are kept (not one per key, image
    # and metric: millions).
    history = tier_history(rows, config.tiers_for, config.default_stat)
    found = episodes(judged_points(rows, config.regression, flagged_only=True))
    return HistoryBoard(rows=rows, history=history, episodes=found)


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
    rows, newest = board_rows(frame, config, latest)
    shown, past = current_board(newest, catalog, config), history_board(rows, config)
    return Leaderboard(**vars(shown), **vars(past))
