"""Page contexts and writers: overview, one page per model x workload, history, table,
accuracy.

Each writer renders one template and returns the page's path relative to the site root.
Pages link relatively, so the site works from disk as well as from ``inferx leaderboard
serve``. Chart data is embedded as JSON (``<script type="application/json">``), never
fetched, because browsers refuse ``fetch`` on ``file://``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from inferx_pipeline.leaderboard.accuracy import AccuracyGroup, row_scores
from inferx_pipeline.leaderboard.board import CurrentBoard, front_column
from inferx_pipeline.leaderboard.config import AXES, STATS, Axis, LeaderboardConfig, Stat
from inferx_pipeline.leaderboard.cost import cost_column, tokens_per_dollar_column
from inferx_pipeline.leaderboard.frame import PAGE_KEYS
from inferx_pipeline.leaderboard.overview import headline_values
from inferx_pipeline.leaderboard.pareto import interactivity_column
from inferx_pipeline.leaderboard.rankings import podium
from inferx_pipeline.leaderboard.site.charts import (
    history_chart,
    model_chart_columns,
    model_page_charts,
)
from inferx_pipeline.leaderboard.site.exports import records
from inferx_pipeline.leaderboard.site.render import render, unique_slugs

# Filters of the table view: URL key -> column.
TABLE_FILTERS: dict[str, str] = {
    "model": "model", "workload": "workload", "sku": "sku", "vendor": "vendor",
    "framework": "framework", "precision": "precision", "spec": "spec_method", "tier": "tier",
}  # fmt: skip


@dataclass(frozen=True)
class PageWriter:
    """Renders pages of one build into ``out`` (shared context: policy, time, price tiers)."""

    out: Path
    config: LeaderboardConfig
    price_tiers: tuple[str, ...]
    generated_at: datetime

    def write(self, rel: str, template: str, **context: object) -> str:
        """Render ``template`` to ``out/rel``; returns ``rel``."""
        depth = rel.count("/")
        html = render(
            template, root="../" * depth, config=self.config, generated_at=self.generated_at,
            price_tiers=self.price_tiers, **context,
        )  # fmt: skip
        path = self.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html)
        return rel


def page_slugs(board: CurrentBoard) -> dict[tuple[str, str], str]:
    """(model, workload) -> file slug of its page."""
    keys = board.current[list(PAGE_KEYS)].drop_duplicates().astype(str).itertuples(index=False)
    pairs = [(m, w) for m, w in keys]
    slugs = unique_slugs(f"{m} {w}" for m, w in pairs)
    return {(m, w): slugs[f"{m} {w}"] for m, w in pairs}


def _sample(frame: pd.DataFrame, limit: int) -> pd.DataFrame:
    # Deterministic so two builds of the same data are byte-identical.
    return frame if len(frame) <= limit else frame.sample(n=limit, random_state=0)


@dataclass(frozen=True)
class PageRows:
    """The rows one model page draws: its share of ``Leaderboard.current``, of each front
    per axis and stat, and of the tier values."""

    current: pd.DataFrame
    fronts: dict[Axis, dict[Stat, pd.DataFrame]]
    tiers: pd.DataFrame


def page_rows(board: CurrentBoard, price_tiers: tuple[str, ...]) -> dict[tuple[str, str], PageRows]:
    """(model, workload) -> its ``PageRows``: each frame split once, not filtered per page,
    and the points kept with only the columns the charts draw (of a hundred and more)."""
    drawn = [*PAGE_KEYS, *model_chart_columns(price_tiers)]
    flags = [front_column(stat, axis) for axis, stat in itertools.product(AXES, STATS)]
    current = _per_page(board.current[[*drawn, *flags]])
    fronts = {
        (axis, stat): _per_page(board.fronts_on(axis)[stat][drawn])
        for axis, stat in itertools.product(AXES, STATS)
    }
    tiers = _per_page(board.tiers)
    empty_tiers = board.tiers.iloc[0:0]
    return {
        key: PageRows(
            current=mine,
            fronts={
                axis: {
                    stat: fronts[axis, stat].get(key, board.fronts_on(axis)[stat].iloc[0:0])
                    for stat in STATS
                }
                for axis in AXES
            },
            tiers=tiers.get(key, empty_tiers),
        )
        for key, mine in current.items()
    }


def _per_page(frame: pd.DataFrame) -> dict[tuple[str, str], pd.DataFrame]:
    # Row order within a page is kept (groupby keeps it), as a boolean filter would.
    keys = [frame[name].astype(str) for name in PAGE_KEYS]
    return {
        (str(model), str(workload)): part
        for (model, workload), part in frame.groupby(keys, sort=False)
    }


def write_model_page(
    writer: PageWriter, rows: PageRows, key: tuple[str, str], slug: str
) -> tuple[str, dict[str, int]]:
    """The charts page of one model x workload from its ``rows`` (``page_rows``); returns
    its path and point counts."""
    model, workload = key
    mine = rows.current
    others: dict[Axis, dict[Stat, pd.DataFrame]] = {axis: {} for axis in AXES}
    limit = writer.config.site.max_scatter_points
    for axis, stat in itertools.product(AXES, STATS):
        # A point without a value on the axis (no per-request data) is not drawn there.
        drawn = mine.loc[
            ~mine[front_column(stat, axis)] & mine[interactivity_column(stat, axis)].notna()
        ]
        others[axis][stat] = _sample(drawn, limit)
    non_optimal = int((~mine[front_column(writer.config.default_stat)]).sum())
    data = {
        "model": model, "workload": workload,
        "charts": model_page_charts(rows.fronts, others, writer.price_tiers, mine),
        "tiers": records(rows.tiers[_tier_columns(writer)]),
    }  # fmt: skip
    shown_points = len(others["intvty"][writer.config.default_stat])
    rel = writer.write(
        f"models/{slug}.html", "model.html", title=f"{model} · {workload}", data=data,
        tier_rows=data["tiers"], stats=STATS, non_optimal=non_optimal, shown_points=shown_points,
        cost=cost_column("total", writer.config.price_tier),
    )  # fmt: skip
    front_points = len(rows.fronts["intvty"][writer.config.default_stat])
    counts = {"front_points": front_points, "non_optimal": non_optimal}
    return rel, counts


def _tier_columns(writer: PageWriter) -> list[str]:
    costs = [cost_column(k, t) for t in writer.price_tiers for k in ("total", "input", "output")]
    return [
        "model", "workload", "sku", "vendor", "framework", "precision", "spec_method", "label",
        "tier", "stat", "status", "tput_per_gpu", "input_tput_per_gpu", "output_tput_per_gpu",
        *costs, *(tokens_per_dollar_column(t) for t in writer.price_tiers),
        "j_per_token", "tok_s_per_mw", "official", "simulated",
        "lo_recipe_id", "lo_image_tag", "lo_conc", "hi_recipe_id", "hi_image_tag", "hi_conc",
        "lo_artifact_sha256", "hi_artifact_sha256",
    ]  # fmt: skip


def tier_table(board: CurrentBoard, writer: PageWriter) -> pd.DataFrame:
    """Tier values in reading order: the table view's and the download's rows."""
    columns = _tier_columns(writer)
    return board.tiers[columns].sort_values(["model", "workload", "tier", "label"])


def overview_sections(
    config: LeaderboardConfig, board: CurrentBoard, slugs: dict[tuple[str, str], str]
) -> list[dict[str, Any]]:
    """The overview's sections, one per model x workload page (``slugs``) at its headline
    tier: the podium and ranking of the groups that reach it, and each group that does
    not, with its front's span."""
    stat = config.default_stat
    heads = headline_values(
        board.tiers, board.fronts[stat], interactivity_column(stat), config.headline_for
    )
    by_page = dict(list(heads.groupby(list(PAGE_KEYS), sort=False)))
    ranked = _per_page(board.ranked)
    sections = []
    for key, slug in sorted(slugs.items()):
        mine = by_page.get(key, heads.iloc[0:0])
        tier = float(mine["tier"].iloc[0]) if len(mine) else None
        page_ranked = ranked.get(key, board.ranked.iloc[0:0])
        sections.append({
            "model": key[0], "workload": key[1], "slug": slug, "tier": tier,
            **_ranking(page_ranked, tier, config.price_tier),
            "missed": records(mine.loc[mine["status"] != "ok"]),
        })  # fmt: skip
    return sections


def write_overview(
    writer: PageWriter, sections: list[dict[str, Any]], recipes: dict[str, str]
) -> str:
    """``index.html``: the ``overview_sections`` and a link to each recipe's history page
    (``recipes``: recipe id -> page slug)."""
    return writer.write(
        "index.html", "index.html", title="Leaderboard", sections=sections,
        cost=cost_column("total", writer.config.price_tier), recipes=recipes,
    )  # fmt: skip


def _ranking(ranked: pd.DataFrame, tier: float | None, price_tier: str) -> dict[str, Any]:
    """The podium (or None) and ranking rows of one page (``ranked``: its ranked tier
    values) at ``tier``."""
    if tier is None:
        return {"podium": None, "ranking": []}
    mine = ranked.loc[ranked["tier"] == tier]
    top = records(podium(mine, tier, price_tier))
    return {"podium": top[0] if top else None, "ranking": records(mine)}


def per_recipe(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``frame`` split by ``recipe_id`` in one pass (pages must not each re-filter it)."""
    groups = frame.groupby(frame["recipe_id"].astype(str), observed=True, sort=False)
    return {str(recipe): part for recipe, part in groups}


def per_recipe_records(frame: pd.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """``records(frame)`` split by ``recipe_id``, in row order: the whole frame converted
    once rather than a few rows per page (a column's conversion costs more than its rows)."""
    split: dict[str, list[dict[str, Any]]] = {}
    for recipe, row in zip(frame["recipe_id"].astype(str).tolist(), records(frame), strict=True):
        split.setdefault(recipe, []).append(row)
    return split


def write_history_page(
    writer: PageWriter,
    series: pd.DataFrame,
    found: list[dict[str, Any]],
    recipe_id: str,
    slug: str,
) -> tuple[str, int]:
    """The history page of one recipe from its ``series`` (``Leaderboard.history`` rows) and
    ``found`` (its ``Leaderboard.episodes`` rows as ``records``: ``per_recipe_records``);
    returns its path and episode count."""
    images = series.drop_duplicates("image_rank").sort_values("image_rank")["image_tag"]
    rank_of = dict(zip(images.astype(str), range(len(images)), strict=True))
    last = len(images) - 1
    marked = sorted({
        (rank_of[str(opened)], rank_of[str(closed)] - 1 if closed is not None else last)
        for opened, closed in ((row["opened_image"], row["closed_image"]) for row in found)
    })  # fmt: skip
    data: dict[str, Any] = {
        "recipe_id": recipe_id, "chart": history_chart(series, list(images.astype(str)), marked),
        "episodes": found,
    }  # fmt: skip
    rel = writer.write(
        f"history/{slug}.html", "history.html", title=f"History · {recipe_id}", data=data,
        episodes=data["episodes"],
    )  # fmt: skip
    return rel, len(found)


def write_table(
    writer: PageWriter, table: pd.DataFrame, accuracy: Sequence[AccuracyGroup] = ()
) -> str:
    """``table.html``: every tier value as an HTML table with filters kept in the URL hash,
    each row beside its configuration's eval score (``accuracy.row_scores``)."""
    options = {
        key: sorted({str(v) for v in table[column].dropna()}, key=_natural)
        for key, column in TABLE_FILTERS.items()
    }
    rows = records(table)
    scores = row_scores(accuracy)
    for row in rows:
        key = tuple(str(row[c]) for c in ("model", "sku", "framework", "precision", "spec_method"))
        found = scores.get(key)
        row["eval_score"], row["eval_below"] = found if found else (None, False)
    return writer.write(
        "table.html", "table.html", title="Table", rows=rows, options=options,
        filters=TABLE_FILTERS, cost=cost_column("total", writer.config.price_tier),
    )  # fmt: skip


def write_accuracy(writer: PageWriter, groups: Sequence[AccuracyGroup]) -> str:
    """``accuracy.html``: per model and task, each configuration's eval score with its
    standard error, threshold and gate state."""
    return writer.write("accuracy.html", "accuracy.html", title="Accuracy", groups=groups)


def _natural(value: str) -> tuple[float, str]:
    try:
        return float(value), ""
    except ValueError:
        return float("inf"), value
