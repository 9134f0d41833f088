"""Pareto fronts of throughput per GPU against interactivity, per comparison group.

A point is on its group's front when no other point of the group is at least as good on
both axes and strictly better on one. Exact duplicates therefore all stay on the front
(neither dominates the other). Vectorized: one sort and a few group-wise cumulative maxima,
so a million rows take well under a second.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from inferx_pipeline.leaderboard.config import Axis, Stat
from inferx_pipeline.leaderboard.frame import GROUP_KEYS

THROUGHPUT = "tput_per_gpu"


def interactivity_column(stat: Stat, axis: Axis = "intvty") -> str:
    """The interactivity column (tok/s/user) on ``axis`` for a percentile statistic."""
    return f"{axis}_{stat}"


def pareto_mask(
    rows: pd.DataFrame, x: str, y: str = THROUGHPUT, by: tuple[str, ...] = GROUP_KEYS
) -> pd.Series:
    """True for rows on the front of ``y`` against ``x`` (both maximized) within ``by``.

    Rows with a NaN on either axis are never on the front. The result is aligned to
    ``rows.index``.
    """
    if rows.empty:
        return pd.Series(False, index=rows.index, dtype=bool)
    finite = rows[x].notna() & rows[y].notna()
    work = rows.loc[finite, [*by, x, y]]
    group = work.groupby(list(by), observed=True, sort=False).ngroup().to_numpy()
    xs = work[x].to_numpy(dtype=float)
    ys = work[y].to_numpy(dtype=float)
    # Group, then x descending: everything that can dominate a point comes before it.
    order = np.lexsort((-ys, -xs, group))
    g, xv, yv = group[order], xs[order], ys[order]
    # Blocks of equal (group, x): only the best y of a block can be on the front, and only
    # if it beats the best y seen at strictly larger x in the same group.
    new_block = np.ones(len(order), dtype=bool)
    new_block[1:] = (g[1:] != g[:-1]) | (xv[1:] != xv[:-1])
    block = np.cumsum(new_block) - 1
    block_best = yv[new_block]  # sorted by -y inside a block, so the first row is the best
    block_group = g[new_block]
    running = pd.Series(block_best).groupby(block_group).cummax().to_numpy()
    previous = np.full(len(running), -np.inf)
    same_group = np.zeros(len(running), dtype=bool)
    same_group[1:] = block_group[1:] == block_group[:-1]
    previous[1:] = np.where(same_group[1:], running[:-1], -np.inf)
    on_front = (yv == block_best[block]) & (yv > previous[block])
    mask = np.zeros(len(order), dtype=bool)
    mask[order] = on_front
    out = pd.Series(False, index=rows.index, dtype=bool)
    out.loc[work.index] = mask
    return out


def pareto_front(rows: pd.DataFrame, stat: Stat, by: tuple[str, ...] = GROUP_KEYS) -> pd.DataFrame:
    """The front rows of each group at interactivity statistic ``stat``, sorted by group and x.

    ``rows`` is a prepared frame (``frame.prepare``); the result keeps all its columns.
    """
    x = interactivity_column(stat)
    front = rows.loc[pareto_mask(rows, x, THROUGHPUT, by)]
    return front.sort_values([*by, x]).reset_index(drop=True)
