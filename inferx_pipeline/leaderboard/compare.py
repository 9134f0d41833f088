"""A pull request's unofficial run beside its baseline, per point and at the tiers (pure).

Matching rule, one point of the run to at most one official point:

- The run's points are its rows keyed by recipe, workload (``frame.workload_labels``:
  scenario, ISL/OSL, thinking mode), configuration (``frame.config_labels``: TP, EP, PP,
  PCP, DP attention, spec method and draft tokens, KV offload) and concurrency. Of a
  point's attempts the newest valid ``ok`` one counts, else the newest, which is listed
  as ``failed`` (status failed or incomplete) or ``invalid`` and never compared.
- The baseline is what the official leaderboard shows now: ``baseline_rows`` without any
  pull request's rows, through ``frame.prepare`` (valid ``ok`` rows with throughput and
  interactivity) and ``frame.current`` (each recipe at its newest image, the newest
  attempt of each point).
- A valid ``ok`` point is compared with the baseline point of the same workload,
  configuration and concurrency of its own recipe, or of ``baseline_recipe`` (for every
  point of the run) when the PR names one; without one it is ``no_baseline``. SKU,
  engine and precision come with the recipe, so they are not matched on their own.
- Tiers: per recipe and workload of the run, the run's Pareto front (all its valid ``ok``
  points) against the baseline front, read at each tier of the workload's scenario
  (``tiers.tier_values``: interpolated, never extrapolated). The baseline front is made
  of its own recipe's points *of the configurations the run swept* (like for like: a PR
  that sweeps only its changed jobs is not held against configurations it left alone),
  or, when ``baseline_recipe`` names another recipe, of all that recipe's points at the
  workload (its front as a reader sees it).

Every value is a stored row's number or interpolated from stored rows, each referenced
by ``result_id``; deltas are PR minus baseline, and percent deltas are relative to the
baseline (None where the baseline is zero or missing).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime
from typing import Literal

import pandas as pd
from pydantic import Field

from inferx_pipeline.errors import LeaderboardError
from inferx_pipeline.leaderboard.config import Stat, TierSet
from inferx_pipeline.leaderboard.frame import (
    LEADERBOARD_COLUMNS,
    badge_labels,
    config_labels,
    current,
    prepare,
    require_columns,
    workload_labels,
)
from inferx_pipeline.leaderboard.pareto import THROUGHPUT, interactivity_column, pareto_front
from inferx_pipeline.leaderboard.tiers import tier_values
from inferx_pipeline.strict import FrozenModel

Metric = Literal["tput_per_gpu", "output_tput_per_gpu", "intvty", "ttft_s", "tpot_s"]
# Per point, in reading order: tok/s/GPU, output tok/s/GPU, tok/s/user, seconds, seconds.
METRICS: tuple[Metric, ...] = ("tput_per_gpu", "output_tput_per_gpu", "intvty", "ttft_s", "tpot_s")
PointState = Literal["compared", "no_baseline", "failed", "invalid"]
# A tier value's state on one side: ``tiers.TierStatus``, or ``none``: the side has no
# valid point of the group at all (every PR point failed, or no official point).
TierState = Literal["ok", "not_reached", "below_range", "none"]
# Where a point lives: one row per key in a run (after choosing the attempt) and in the
# baseline (after ``frame.current``).
POINT_KEYS: tuple[str, ...] = ("recipe_id", "workload", "config", "conc")
# The tiers of every scenario, or of each (``LeaderboardConfig.tier_set``).
Tiers = TierSet | Callable[[str], TierSet]
_IDENTITY = ("result_id", "run_id", "job_id", "pr_number", "measured_in")


def metric_column(metric: Metric, stat: Stat) -> str:
    """The ResultRecord column of ``metric`` at percentile ``stat`` (``ttft_s`` at median:
    ``ttft_median_s``)."""
    return {
        "tput_per_gpu": THROUGHPUT,
        "output_tput_per_gpu": "output_tput_per_gpu",
        "intvty": interactivity_column(stat),
        "ttft_s": f"ttft_{stat}_s",
        "tpot_s": f"tpot_{stat}_s",
    }[metric]


def compare_columns(stat: Stat) -> tuple[str, ...]:
    """The ResultRecord columns ``compare_run`` reads of both frames at ``stat``."""
    extra = (*_IDENTITY, *(metric_column(m, stat) for m in METRICS))
    return tuple(dict.fromkeys((*LEADERBOARD_COLUMNS, *extra)))


class Measured(FrozenModel):
    """One stored row's numbers at the comparison's statistic (None: the row has none)."""

    result_id: str
    run_id: str
    recipe_id: str
    image: str
    image_tag: str
    attempt: int
    finished_at: datetime | None
    status: str = Field(description="The row's status: ok, invalid, failed, incomplete.")
    valid: bool
    measured_in: str | None = Field(
        description="The run that measured the point when this run took it over unchanged."
    )
    tput_per_gpu: float | None = Field(description="tok/s/GPU, all tokens.")
    output_tput_per_gpu: float | None = Field(description="tok/s/GPU, output tokens.")
    intvty: float | None = Field(description="Interactivity at the stat, tok/s/user.")
    ttft_s: float | None = Field(description="Time to first token at the stat, seconds.")
    tpot_s: float | None = Field(description="Time per output token at the stat, seconds.")

    def value(self, metric: Metric) -> float | None:
        """The value of ``metric``."""
        found: float | None = getattr(self, metric)
        return found


class Change(FrozenModel):
    """A value on both sides and how far the PR moved it."""

    pr: float | None
    baseline: float | None
    delta: float | None = Field(description="PR - baseline, in the value's unit.")
    pct: float | None = Field(description="100 x delta / baseline; None for a zero baseline.")


class PointComparison(FrozenModel):
    """One point of the run and its baseline point."""

    recipe_id: str
    scenario: str
    workload: str
    config: str
    conc: int
    state: PointState
    pr: Measured
    baseline: Measured | None
    changes: dict[Metric, Change] = Field(description="Per metric; empty unless compared.")


class TierSide(FrozenModel):
    """One side's throughput at a tier and the front points it lies between."""

    state: TierState
    tput_per_gpu: float | None = Field(description="Interpolated tok/s/GPU; None unless ok.")
    lo_result_id: str | None = Field(description="The bracketing point below the tier.")
    hi_result_id: str | None = Field(description="The bracketing point above the tier.")


class TierComparison(FrozenModel):
    """One recipe x workload of the run at one interactivity tier."""

    recipe_id: str
    baseline_recipe_id: str
    scenario: str
    workload: str
    tier: float = Field(description="Interactivity, tok/s/user.")
    headline: bool = Field(description="The scenario's headline tier.")
    pr: TierSide
    baseline: TierSide
    change: Change


class Baseline(FrozenModel):
    """What one recipe of the run is compared with."""

    recipe_id: str = Field(description="The run's recipe.")
    baseline_recipe_id: str
    named: bool = Field(description="The PR named the baseline recipe.")
    image: str | None = Field(description="The baseline's image; None: no official point.")


class RunComparison(FrozenModel):
    """An unofficial run against its baseline; see the module docstring."""

    stat: Stat = Field(description="Percentile of interactivity, TTFT and TPOT.")
    baseline_recipe: str | None = Field(description="The recipe the PR named, if any.")
    baselines: tuple[Baseline, ...]
    points: tuple[PointComparison, ...]
    tiers: tuple[TierComparison, ...]

    def count(self, state: PointState) -> int:
        """How many points are in ``state``."""
        return sum(point.state == state for point in self.points)


def compare_run(
    pr_rows: pd.DataFrame,
    baseline_rows: pd.DataFrame,
    tiers: Tiers,
    stat: Stat,
    baseline_recipe: str | None = None,
) -> RunComparison:
    """Compare one unofficial run's rows (``pr_rows``, ResultRecord columns) with the
    official ``baseline_rows`` at interactivity statistic ``stat`` (see the module
    docstring for the rule). ``tiers`` is a ``TierSet`` for every scenario or a function
    of the scenario (``LeaderboardConfig.tier_set``). Raises LeaderboardError when a frame
    lacks a column of ``compare_columns(stat)`` or ``pr_rows`` holds more than one run.
    An empty ``pr_rows`` gives a comparison without points.
    """
    columns = compare_columns(stat)
    require_columns(pr_rows, columns)
    require_columns(baseline_rows, columns)
    runs = sorted(pr_rows["run_id"].astype(str).unique())
    if len(runs) > 1:
        raise LeaderboardError(
            f"compare_run: rows of {len(runs)} runs ({', '.join(runs[:3])}); expected one "
            "run's rows: read them with ResultFilter(pull_requests='only', run_ids=(run,))"
        )
    tier_set = tiers if callable(tiers) else (lambda _scenario: tiers)
    points = run_points(pr_rows)
    base = baseline_points(baseline_rows, columns)
    target = points["recipe_id"].astype(str) if baseline_recipe is None else baseline_recipe
    points = points.assign(baseline_recipe_id=target)
    matched = zip(points.to_dict("records"), _match(points, base), strict=True)
    return RunComparison(
        stat=stat,
        baseline_recipe=baseline_recipe,
        baselines=_baselines(points, base, baseline_recipe),
        points=tuple(_point(row, found, stat) for row, found in matched),
        tiers=tuple(_tier_rows(points, base, tier_set, stat, named=baseline_recipe is not None)),
    )


def run_points(rows: pd.DataFrame) -> pd.DataFrame:
    """The run's rows, one per point (``POINT_KEYS``): the newest valid ``ok`` attempt,
    else the newest; with ``workload``, ``config``, ``badge`` and ``good`` (valid, ok,
    with throughput and interactivity)."""
    good = (
        rows["valid"].astype(bool)
        & (rows["status"].astype(str) == "ok")
        & (rows[THROUGHPUT].fillna(0) > 0)
        & (rows["intvty_median"].fillna(0) > 0)
    )
    labelled = rows.assign(
        workload=workload_labels(rows), config=config_labels(rows), badge=badge_labels(rows),
        good=good,
    ).astype({"recipe_id": str, "conc": int})  # fmt: skip
    ordered = labelled.sort_values(["good", "attempt", "finished_at"], kind="stable")
    newest = ordered.drop_duplicates(list(POINT_KEYS), keep="last")
    return newest.sort_values(list(POINT_KEYS)).reset_index(drop=True)


def at_image(rows: pd.DataFrame, image: str | None) -> pd.DataFrame:
    """The rows measured at ``image`` (a full reference or a tag); all rows for None."""
    if image is None or rows.empty:
        return rows
    mine = (rows["image"].astype(str) == image) | (rows["image_tag"].astype(str) == image)
    return rows.loc[mine]


def baseline_points(rows: pd.DataFrame, columns: tuple[str, ...]) -> pd.DataFrame:
    """The official points the leaderboard shows now (``frame.current``) of ``rows``,
    keys as plain strings; a pull request's rows, if any slipped in, are left out."""
    official = rows.loc[rows["pr_number"].isna()]
    shown = current(prepare(official, columns))
    return shown.astype({"recipe_id": str, "workload": str, "config": str, "conc": int})


def baseline_group(
    base: pd.DataFrame, recipe_id: str, workload: str, configs: set[str] | None
) -> pd.DataFrame:
    """The baseline points (``baseline_points``) a run's front at ``workload`` is held
    against: ``recipe_id``'s, of ``configs`` only (the run's own recipe: like for like) or
    of every configuration (None: a recipe the PR named)."""
    mine = base.loc[(base["recipe_id"] == recipe_id) & (base["workload"] == workload)]
    return mine if configs is None else mine.loc[mine["config"].isin(configs)]


def _match(points: pd.DataFrame, base: pd.DataFrame) -> list[dict[str, object] | None]:
    """Per point of the run, its baseline row (None: not a valid point, or none found)."""
    right = base.rename(columns={"recipe_id": "baseline_recipe_id"})
    keys = ["baseline_recipe_id", "workload", "config", "conc"]
    keep = right[keys].assign(_base=range(len(right)))
    merged = points[keys].merge(keep, on=keys, how="left", validate="many_to_one")
    records = base.to_dict("records")
    return [
        records[int(at)] if good and not pd.isna(at) else None
        for at, good in zip(merged["_base"], points["good"], strict=True)
    ]


def _num(value: object) -> float | None:
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    number = float(value)  # type: ignore[arg-type]  # numpy and Python numbers alike
    return None if math.isnan(number) else number


def _int(value: object) -> int:
    found: int = int(value)  # type: ignore[call-overload]  # numpy and Python integers alike
    return found


def _time(value: object) -> datetime | None:
    if value is None or pd.isna(value):
        return None
    found: datetime = pd.Timestamp(value).to_pydatetime()
    return found


def _measured(row: dict[str, object], stat: Stat) -> Measured:
    return Measured(
        result_id=str(row["result_id"]),
        run_id=str(row["run_id"]),
        recipe_id=str(row["recipe_id"]),
        image=str(row["image"]),
        image_tag=str(row["image_tag"]),
        attempt=_int(row["attempt"]),
        finished_at=_time(row["finished_at"]),
        status=str(row["status"]),
        valid=bool(row["valid"]),
        measured_in=None if pd.isna(row["measured_in"]) else str(row["measured_in"]),
        tput_per_gpu=_num(row[metric_column("tput_per_gpu", stat)]),
        output_tput_per_gpu=_num(row[metric_column("output_tput_per_gpu", stat)]),
        intvty=_num(row[metric_column("intvty", stat)]),
        ttft_s=_num(row[metric_column("ttft_s", stat)]),
        tpot_s=_num(row[metric_column("tpot_s", stat)]),
    )


def change(pr: float | None, baseline: float | None) -> Change:
    """``pr`` against ``baseline``: the difference and its percentage of the baseline."""
    if pr is None or baseline is None:
        return Change(pr=pr, baseline=baseline, delta=None, pct=None)
    delta = pr - baseline
    pct = 100.0 * delta / baseline if baseline != 0 else None
    return Change(pr=pr, baseline=baseline, delta=delta, pct=pct)


def _state(row: dict[str, object], found: dict[str, object] | None) -> PointState:
    if row["good"]:
        return "compared" if found is not None else "no_baseline"
    return "failed" if str(row["status"]) in ("failed", "incomplete") else "invalid"


def _point(row: dict[str, object], found: dict[str, object] | None, stat: Stat) -> PointComparison:
    pr = _measured(row, stat)
    baseline = _measured(found, stat) if found is not None else None
    changes = {m: change(pr.value(m), baseline.value(m)) for m in METRICS} if baseline else {}
    return PointComparison(
        recipe_id=pr.recipe_id, scenario=str(row["scenario"]), workload=str(row["workload"]),
        config=str(row["config"]), conc=_int(row["conc"]),
        state=_state(row, found), pr=pr, baseline=baseline, changes=changes,
    )  # fmt: skip


def _baselines(points: pd.DataFrame, base: pd.DataFrame, named: str | None) -> tuple[Baseline, ...]:
    pairs = points[["recipe_id", "baseline_recipe_id"]].drop_duplicates()
    images = base.drop_duplicates("recipe_id").set_index("recipe_id")["image"].astype(str)
    return tuple(
        Baseline(
            recipe_id=recipe,
            baseline_recipe_id=target,
            named=named is not None,
            image=images.get(target),
        )
        for recipe, target in pairs.itertuples(index=False, name=None)
    )


def _tier_rows(
    points: pd.DataFrame,
    base: pd.DataFrame,
    tier_set: Callable[[str], TierSet],
    stat: Stat,
    *,
    named: bool,
) -> list[TierComparison]:
    out: list[TierComparison] = []
    good = points.loc[points["good"]]
    for (recipe, workload), mine in points.groupby(["recipe_id", "workload"], sort=True):
        target, scenario = str(mine["baseline_recipe_id"].iloc[0]), str(mine["scenario"].iloc[0])
        theirs = baseline_group(base, target, str(workload), None if named else set(mine["config"]))
        ours = good.loc[(good["recipe_id"] == recipe) & (good["workload"] == workload)]
        found = tier_set(scenario)
        pr_side, base_side = _sides(ours, found, stat), _sides(theirs, found, stat)
        for tier in found.tiers:
            pr, baseline = pr_side[tier], base_side[tier]
            out.append(TierComparison(
                recipe_id=str(recipe), baseline_recipe_id=target, scenario=scenario,
                workload=str(workload), tier=tier, headline=tier == found.headline_tier,
                pr=pr, baseline=baseline, change=change(pr.tput_per_gpu, baseline.tput_per_gpu),
            ))  # fmt: skip
    return out


def _sides(rows: pd.DataFrame, found: TierSet, stat: Stat) -> dict[float, TierSide]:
    """Each tier's value on the front of ``rows`` (one recipe x workload)."""
    none = TierSide(state="none", tput_per_gpu=None, lo_result_id=None, hi_result_id=None)
    drawable = rows.loc[rows[interactivity_column(stat)].notna()]
    if drawable.empty:
        return dict.fromkeys(found.tiers, none)
    by = ("workload",)
    values = tier_values(pareto_front(drawable, stat, by), found.tiers, stat, by)
    # A front point is one (config, conc) of the group: that names its row.
    ids = {
        (str(c), int(n)): str(r)
        for c, n, r in drawable[["config", "conc", "result_id"]].itertuples(index=False)
    }

    def _id(config: object, conc: object) -> str | None:
        if pd.isna(conc):
            return None
        return ids.get((str(config), _int(conc)))

    return {
        float(row["tier"]): TierSide(
            state=str(row["status"]),
            tput_per_gpu=_num(row[THROUGHPUT]),
            lo_result_id=_id(row["lo_config"], row["lo_conc"]),
            hi_result_id=_id(row["hi_config"], row["hi_conc"]),
        )
        for row in values.to_dict("records")
    }
