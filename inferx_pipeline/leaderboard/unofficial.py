"""Pull requests' unofficial runs as the site shows them, each beside its baseline (pure).

The rows of an unofficial run carry its PR (``pr_number``, ``head_sha``) and never reach
the official pages: ``split_runs`` takes them out of any frame the site is built from.
Each run present gets a ``RunView``: its listing entry, its ``compare.RunComparison``,
the points of each chart (the run's and its baseline's, per recipe and workload) and its
eval scores. A run's pages live under ``unofficial/<run_dir(run id)>/``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

import pandas as pd
from pydantic import Field

from inferx_pipeline.leaderboard.accuracy import AccuracyGroup, accuracy_groups
from inferx_pipeline.leaderboard.compare import (
    RunComparison,
    at_image,
    baseline_group,
    baseline_points,
    compare_columns,
    compare_run,
    run_points,
)
from inferx_pipeline.leaderboard.config import LeaderboardConfig
from inferx_pipeline.results.eval_record import EvalRecord
from inferx_pipeline.results.gate import mark_rows
from inferx_pipeline.strict import FrozenModel

# A run id that is already a safe URL path segment is used as it is.
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def run_dir(run_id: str) -> str:
    """The folder of run ``run_id``'s pages under ``unofficial/``: the run id itself when
    it is a safe path segment (letters, digits, ``._-``; a Dagster or uuid run id), else
    a slug of it with 8 hex digits of its sha256 (distinct per run id)."""
    if _SAFE.match(run_id):
        return run_id
    slug = re.sub(r"[^A-Za-z0-9]+", "-", run_id).strip("-")[:64] or "run"
    return f"{slug}-{hashlib.sha256(run_id.encode()).hexdigest()[:8]}"


def split_runs(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(official, unofficial)`` rows of ``frame``: a row with a ``pr_number`` is a pull
    request's. A frame without the column, or without such rows, is returned as it is."""
    if "pr_number" not in frame.columns:
        return frame, frame.iloc[0:0]
    mine = frame["pr_number"].notna()
    if not mine.any():
        return frame, frame.iloc[0:0]
    return frame.loc[~mine].reset_index(drop=True), frame.loc[mine].reset_index(drop=True)


@dataclass(frozen=True)
class UnofficialRuns:
    """What the unofficial pages are made of.

    ``rows``: every unofficial run's rows (all ResultRecord columns); ``baseline``:
    official rows of their recipes (at least ``compare.compare_columns``); ``evals``: eval
    rows (``EvalRecord`` columns) of those runs; ``baseline_recipes``: run id -> the
    recipe its PR named as baseline (the run's own recipes otherwise);
    ``baseline_images``: run id -> the image its PR named (the newest shown otherwise).
    """

    rows: pd.DataFrame
    baseline: pd.DataFrame
    evals: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=list(EvalRecord.model_fields))
    )
    baseline_recipes: Mapping[str, str] = field(default_factory=dict)
    baseline_images: Mapping[str, str] = field(default_factory=dict)


class RunEntry(FrozenModel):
    """One unofficial run as the index lists it."""

    run_id: str
    folder: str = Field(description="Its folder under unofficial/ (run_dir).")
    pr_number: int
    head_sha: str
    finished_at: datetime | None = Field(description="Its newest row's finish time.")
    recipes: tuple[str, ...]
    points: int = Field(description="Points stored (valid or not).")


@dataclass(frozen=True)
class ChartGroup:
    """The points of one chart: one recipe x workload of a run and its baseline."""

    recipe_id: str
    baseline_recipe_id: str
    workload: str
    pr: pd.DataFrame
    baseline: pd.DataFrame


@dataclass(frozen=True)
class RunView:
    """Everything one run's pages show."""

    entry: RunEntry
    comparison: RunComparison
    charts: tuple[ChartGroup, ...]
    accuracy: tuple[AccuracyGroup, ...]


def run_views(runs: UnofficialRuns, config: LeaderboardConfig) -> list[RunView]:
    """A view per run in ``runs.rows``, newest first (ties by run id), compared at the
    policy's default statistic and tiers. Raises LeaderboardError on a missing column."""
    if runs.rows.empty:
        return []
    stat = config.default_stat
    named_all = set(runs.baseline_recipes.values())
    wanted_all = {*runs.rows["recipe_id"].astype(str), *named_all}
    official = runs.baseline.loc[runs.baseline["recipe_id"].astype(str).isin(wanted_all)]
    columns = compare_columns(stat)
    base = baseline_points(official, columns)
    views = []
    for run_id, rows in runs.rows.groupby(runs.rows["run_id"].astype(str), sort=True):
        named = runs.baseline_recipes.get(str(run_id))
        image = runs.baseline_images.get(str(run_id))
        wanted = {*rows["recipe_id"].astype(str), *([named] if named else [])}
        baseline = at_image(official.loc[official["recipe_id"].astype(str).isin(wanted)], image)
        comparison = compare_run(rows, baseline, config.tier_set, stat, named)
        views.append(RunView(
            entry=_entry(str(run_id), rows), comparison=comparison,
            charts=_charts(rows, base if image is None else baseline_points(baseline, columns),
                           named),
            accuracy=tuple(_accuracy(rows, runs.evals, str(run_id))),
        ))  # fmt: skip
    return sorted(views, key=_newest_first)


def _newest_first(view: RunView) -> tuple[float, str]:
    finished = view.entry.finished_at
    return (-finished.timestamp() if finished else 0.0, view.entry.run_id)


def _entry(run_id: str, rows: pd.DataFrame) -> RunEntry:
    newest = rows.sort_values("finished_at", kind="stable").iloc[-1]
    finished = rows["finished_at"].max()
    return RunEntry(
        run_id=run_id, folder=run_dir(run_id), pr_number=int(newest["pr_number"]),
        head_sha=str(newest["head_sha"]),
        finished_at=None if pd.isna(finished) else pd.Timestamp(finished).to_pydatetime(),
        recipes=tuple(sorted(rows["recipe_id"].astype(str).unique())), points=len(rows),
    )  # fmt: skip


def _charts(rows: pd.DataFrame, base: pd.DataFrame, named: str | None) -> tuple[ChartGroup, ...]:
    points = run_points(rows)
    good = points.loc[points["good"]]
    groups = []
    for (recipe, workload), mine in points.groupby(["recipe_id", "workload"], sort=True):
        target = named or str(recipe)
        configs = None if named else set(mine["config"])
        groups.append(ChartGroup(
            recipe_id=str(recipe), baseline_recipe_id=target, workload=str(workload),
            pr=good.loc[(good["recipe_id"] == recipe) & (good["workload"] == workload)],
            baseline=baseline_group(base, target, str(workload), configs),
        ))  # fmt: skip
    return tuple(groups)


def _accuracy(rows: pd.DataFrame, evals: pd.DataFrame, run_id: str) -> list[AccuracyGroup]:
    mine = evals.loc[evals["run_id"].astype(str) == run_id]
    if mine.empty:
        return []
    return accuracy_groups(mine, mark_rows(rows, mine))
