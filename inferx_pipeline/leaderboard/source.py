"""What the leaderboard reads from the results store: two set-based queries, not one big one.

Every image's rows are read with only the history columns (categorical strings), filtered
in SQL to the rows ``frame.prepare`` keeps; the newest image of each recipe is found in
those, and only its rows are read again with every ``LEADERBOARD_COLUMNS`` column for the
fronts, tiers and pages. On a million rows this reads about half the cells one query of
all columns would. Both reads are the store's categorical ``read_frame``, and the history
read leaves out ``valid`` and ``status``: the filter fixes them. On SQLite the newest
images' rows are read again by row id (``_read_by_rowid``).

Pull requests' unofficial runs are read apart (``read_unofficial``): their rows, the
official rows of their recipes (the baseline) and their eval scores, which the official
accuracy page leaves out (``read_accuracy``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import func, literal_column, select

from inferx_pipeline.leaderboard.accuracy import AccuracyGroup, accuracy_groups
from inferx_pipeline.leaderboard.compare import compare_columns
from inferx_pipeline.leaderboard.config import LeaderboardConfig, Stat
from inferx_pipeline.leaderboard.frame import LEADERBOARD_COLUMNS, history_columns, newest_images
from inferx_pipeline.leaderboard.pareto import interactivity_column
from inferx_pipeline.leaderboard.unofficial import UnofficialRuns
from inferx_pipeline.results.configs import CONFIG_FIELDS
from inferx_pipeline.results.evals import read_evals
from inferx_pipeline.results.filters import ResultFilter, where_clauses
from inferx_pipeline.results.gate import mark_rows
from inferx_pipeline.results.pull_runs import baseline_images, baseline_recipes, read_pull_runs
from inferx_pipeline.results.reader import ROWID, concat_categoricals
from inferx_pipeline.results.store import ResultStore
from inferx_pipeline.results.tables import RESULTS

# The rows prepare() keeps, as SQL: valid, status ok, positive throughput and interactivity.
SHOWN = ResultFilter(valid_only=True, statuses=("ok",), measured_only=True)
# What SHOWN guarantees of every row it returns: filled in, not read a million times.
_SHOWN_VALUES = ("valid", "status")
# Every row of pull requests' unofficial runs, failed and invalid ones too.
UNOFFICIAL = ResultFilter(pull_requests="only")
# (recipe, image) pairs per query: two bound parameters each, under SQLite's 32,766.
PAIRS_PER_QUERY = 10_000


@dataclass(frozen=True)
class SiteInputs:
    """Everything the site is built from (``build.build_site``'s arguments)."""

    history: pd.DataFrame
    latest: pd.DataFrame
    accuracy: list[AccuracyGroup]
    unofficial: UnofficialRuns


def read_site_inputs(store: ResultStore, config: LeaderboardConfig) -> SiteInputs:
    """``read_board_frames``, ``read_accuracy`` and ``read_unofficial`` of ``store``.
    Raises StoreError when a query fails."""
    history, latest = read_board_frames(store, config)
    return SiteInputs(
        history, latest, read_accuracy(store), read_unofficial(store, config.default_stat)
    )


def read_board_frames(
    store: ResultStore, config: LeaderboardConfig
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(history, latest)`` for ``compute_leaderboard(history, ..., latest=latest)``.

    ``history``: every shown row with ``history_columns`` for ``config``; ``latest``: the
    shown rows of each recipe's newest image with all ``LEADERBOARD_COLUMNS``. Strings are
    categorical. Raises StoreError when a query fails.
    """
    extra = (interactivity_column(config.default_stat), *config.regression.metrics)
    wanted = [name for name in history_columns(extra) if name not in _SHOWN_VALUES]
    if store.engine.dialect.name == "sqlite":
        return _read_by_rowid(store, wanted)
    history = store.read_frame(SHOWN, wanted, categorical=True)
    history = history.assign(**_shown_values(len(history)))
    newest = list(newest_images(history).astype(str).itertuples(index=False, name=None))
    # No shown rows: an empty read of the same columns (any pair filter would mean "any").
    batches = list(_batches(newest)) or [(("", ""),)]
    parts = [
        store.read_frame(_images(pairs), LEADERBOARD_COLUMNS, categorical=True) for pairs in batches
    ]
    return history, _concat(parts)


def _read_by_rowid(store: ResultStore, wanted: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``read_board_frames`` on SQLite: the history read carries each row's ``rowid``, and
    the newest images' rows are then read by it.

    Filtered by (recipe, image) pairs instead, the second read scans every row again (the
    pairs match no index), which costs about as long as reading them all; by rowid it looks
    up only its own. The row ids travel as one JSON array (SQLite's ``json_each``), not a
    bound parameter each: binding 20,000 parameters cost more than the lookup. Rows come
    in rowid order either way (the scan walks an index whose keys all tie on
    ``pr_number IS NULL``), so both reads give the same frames.
    """
    history = _read_history(store, wanted)
    rowids, history = history.pop(ROWID).to_numpy(), history.assign(**_shown_values(len(history)))
    newest = newest_images(history)
    mine = history[["recipe_id", "image_tag"]].merge(newest, how="left", indicator=True)
    wanted_ids = json.dumps(np.sort(rowids[(mine["_merge"] == "both").to_numpy()]).tolist())
    listed = select(func.json_each(wanted_ids).table_valued("value").c.value)
    columns = [RESULTS.c[name] for name in LEADERBOARD_COLUMNS]
    latest = store.read_select(
        select(*columns).where(literal_column(ROWID).in_(listed)),
        LEADERBOARD_COLUMNS,
        categorical=True,
    )
    return history, latest


def _read_history(store: ResultStore, wanted: list[str]) -> pd.DataFrame:
    """The shown rows' ``wanted`` columns and ``ROWID``, in rowid order."""
    read = select(*(RESULTS.c[name] for name in wanted), literal_column(ROWID))
    return store.read_select(read.where(*where_clauses(SHOWN)), [*wanted, ROWID], categorical=True)


def read_accuracy(store: ResultStore) -> list[AccuracyGroup]:
    """The accuracy page's groups: every stored eval score but those of pull requests'
    runs, and the shown throughput rows of its configuration the gate marks. Raises
    StoreError when a query fails."""
    evals = read_evals(store)
    evals = evals.loc[evals["pr_number"].isna()]
    if evals.empty:
        return []
    # The recipe is part of a configuration: only its scored recipes' rows can hold one
    # (a million-row store, most of it never evaluated, is not read whole).
    recipes = tuple(sorted(set(evals["recipe_id"].astype(str))))
    wanted = SHOWN.model_copy(update={"recipe_ids": recipes})
    rows = store.read_frame(wanted, ("fingerprint", "image_digest", *CONFIG_FIELDS))
    return accuracy_groups(evals, mark_rows(rows, evals))


def read_unofficial(store: ResultStore, stat: Stat) -> UnofficialRuns:
    """Every unofficial run's rows (all columns), the shown official rows of their recipes
    and of the baseline recipes their PRs named, with the baseline images they named
    (``results.pull_runs``), in the columns ``compare.compare_run`` reads at ``stat``, and
    the runs' eval rows. Raises StoreError when a query fails."""
    pulls = read_pull_runs(store)
    named = baseline_recipes(pulls)
    rows = store.read_frame(UNOFFICIAL)
    recipes = tuple(sorted({*rows["recipe_id"].astype(str), *named.values()}))
    # No recipe: an empty read of the same columns (an empty filter would mean "any").
    wanted = SHOWN.model_copy(update={"recipe_ids": recipes or ("",)})
    baseline = store.read_frame(wanted, compare_columns(stat))
    runs = UnofficialRuns(
        rows=rows, baseline=baseline, baseline_recipes=named, baseline_images=baseline_images(pulls)
    )
    if rows.empty:
        return runs
    evals = read_evals(store)
    mine = evals.loc[
        evals["pr_number"].notna()
        & evals["run_id"].astype(str).isin(set(rows["run_id"].astype(str)))
    ]
    return replace(runs, evals=mine)


def _shown_values(rows: int) -> dict[str, Any]:
    """The ``_SHOWN_VALUES`` columns of ``rows`` rows, as ``read_frame`` would type them."""
    ok = pd.Categorical.from_codes(np.zeros(rows, dtype=np.int8), categories=pd.Index(["ok"]))
    return {"valid": np.ones(rows, dtype=bool), "status": ok}


def _images(pairs: tuple[tuple[str, str], ...]) -> ResultFilter:
    return SHOWN.model_copy(update={"recipe_images": pairs})


def _concat(parts: list[pd.DataFrame]) -> pd.DataFrame:
    if len(parts) == 1:
        return parts[0]
    # Reads carry different categories, where concat falls back to strings: merge the codes.
    return pd.DataFrame({
        name: concat_categoricals([part[name] for part in parts])
        if isinstance(first.dtype, pd.CategoricalDtype)
        else pd.concat([part[name] for part in parts], ignore_index=True)
        for name, first in parts[0].items()
    })  # fmt: skip


def _batches(pairs: list[tuple[str, str]]) -> Iterator[tuple[tuple[str, str], ...]]:
    for start in range(0, len(pairs), PAIRS_PER_QUERY):
        yield tuple(pairs[start : start + PAIRS_PER_QUERY])
