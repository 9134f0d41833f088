"""Result rows (a DataFrame or the results store) -> the static site directory.

The site is built in a new folder of ``<out>.builds`` and swapped in at the end by
renaming a symlink over ``out`` (``builds.py``), so a reader never sees half a site, never
finds ``out`` missing, and pages of vanished groups do not linger. A directory that is
not a previous build (no ``manifest.json``) is never replaced. One build of a site runs
at a time (a lock on ``<out>.lock``): a second waits, then builds afresh.

Rows of pull requests' unofficial runs never reach the official pages: they are split off
first (``unofficial.split_runs``) and make the pages under ``unofficial/``
(``site/unofficial_pages.py``), each run beside its official baseline.

The board's two halves (``board.current_board`` and ``board.history_board``) share only
their input: a large build computes and writes the current half's pages in a worker
process (``child_call``) while this one does the history half's, then writes the
overview, which draws on both.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import plotly.offline
from pydantic import Field

from inferx_pipeline.catalog import Catalog, cached_catalog
from inferx_pipeline.child_call import call_in_child
from inferx_pipeline.errors import LeaderboardError
from inferx_pipeline.leaderboard.accuracy import AccuracyGroup
from inferx_pipeline.leaderboard.board import (
    CurrentBoard,
    HistoryBoard,
    board_rows,
    current_board,
    history_board,
)
from inferx_pipeline.leaderboard.builds import activate, new_build
from inferx_pipeline.leaderboard.config import LeaderboardConfig, load_leaderboard_config
from inferx_pipeline.leaderboard.regressions import alerts_document
from inferx_pipeline.leaderboard.site import pages, unofficial_pages
from inferx_pipeline.leaderboard.site.exports import write_downloads
from inferx_pipeline.leaderboard.site.render import unique_slugs
from inferx_pipeline.leaderboard.unofficial import RunView, UnofficialRuns, run_views, split_runs
from inferx_pipeline.locks import file_lock
from inferx_pipeline.strict import FrozenModel

PageKind = Literal[
    "overview", "model", "history", "table", "accuracy",
    "unofficial-runs", "unofficial-run", "unofficial-accuracy",
]  # fmt: skip
MANIFEST = "manifest.json"
ALERTS = "alerts.json"
# From this many prepared rows on, the current half runs in a worker process beside the
# history half (two cores: 1M rows build in 7.5 s rather than 10); below it, the
# worker's start (about 1 s the first time) would cost more than it saves.
SIDE_BY_SIDE_ROWS = 200_000


class PageEntry(FrozenModel):
    """One written page."""

    path: str = Field(description="Path relative to the site root, '/'-separated.")
    kind: PageKind
    title: str


class SiteManifest(FrozenModel):
    """What a build wrote: pages, downloads and the counts behind them."""

    out_dir: str
    generated_at: datetime
    pages: tuple[PageEntry, ...]
    downloads: tuple[str, ...]
    counts: dict[str, int] = Field(description="rows, current_rows, groups, front_points, ...")


def build_site(
    frame: pd.DataFrame,
    out: Path,
    catalog: Catalog,
    config: LeaderboardConfig,
    generated_at: datetime | None = None,
    latest: pd.DataFrame | None = None,
    accuracy: Sequence[AccuracyGroup] = (),
    unofficial: UnofficialRuns | None = None,
    *,
    side_by_side: bool | None = None,
) -> SiteManifest:
    """Compute the leaderboard of ``frame`` (ResultRecord columns) and write the site to ``out``.

    ``frame`` and ``latest`` are as for ``board.compute_leaderboard``; ``accuracy`` fills
    the accuracy page (``leaderboard.accuracy``). Rows of pull requests' runs (with a
    ``pr_number``) in ``frame`` or ``latest`` are left out of the official pages; they
    make the unofficial-run pages, compared with ``frame``'s official rows, unless
    ``unofficial`` gives those pages' rows, baseline and evals. Raises LeaderboardError
    when a frame lacks columns or ``out`` exists but is not a previous site build.
    ``generated_at`` defaults to now (UTC).

    ``side_by_side`` computes and writes the current half (``board.current_board``: fronts,
    tiers, model pages, table, downloads) in a worker process while this one does the
    history half; None chooses it for at least ``SIDE_BY_SIDE_ROWS`` rows on two or more
    CPUs. The site is the same either way.
    """
    frame, found = split_runs(frame)
    latest = split_runs(latest)[0] if latest is not None else None
    runs = run_views(
        unofficial if unofficial is not None else UnofficialRuns(rows=found, baseline=frame), config
    )
    rows, newest = board_rows(frame, config, latest)
    if side_by_side is None:
        side_by_side = len(rows) >= SIDE_BY_SIDE_ROWS and len(os.sched_getaffinity(0)) > 1
    halves = _Halves(rows, newest, catalog, config, generated_at or datetime.now(UTC), side_by_side)
    with file_lock(out.with_name(out.name + ".lock")):
        if out.exists() and any(out.iterdir()) and not (out / MANIFEST).is_file():
            raise LeaderboardError(
                f"{out}: exists and is not a leaderboard build (no {MANIFEST}); "
                "choose an empty or new --out directory"
            )
        staging = new_build(out)
        manifest = halves.write(staging, out, accuracy, runs)
        (staging / MANIFEST).write_text(manifest.model_dump_json(indent=1))
        activate(out, staging)
    return manifest


def build_site_from_store(
    url: str, out: Path, catalog_dir: Path, generated_at: datetime | None = None
) -> SiteManifest:
    """Read what the leaderboard needs from the results store at ``url`` (the unofficial
    runs too: ``source.read_unofficial``) and build the site."""
    # The DB layer only when asked for.
    from inferx_pipeline.leaderboard.source import read_site_inputs
    from inferx_pipeline.results.store import ResultStore

    config = load_leaderboard_config(catalog_dir)
    store = ResultStore(url)
    try:
        read = read_site_inputs(store, config)
    finally:
        store.close()
    catalog = cached_catalog(catalog_dir)
    return build_site(
        read.history, out, catalog, config, generated_at, read.latest, read.accuracy,
        read.unofficial,
    )  # fmt: skip


@dataclass(frozen=True)
class _CurrentPages:
    """What the current half wrote, and the overview's sections (the overview links the
    history pages too, so it is written once both halves are done)."""

    sections: list[dict[str, Any]]
    models: list[PageEntry]
    others: list[PageEntry]  # table, accuracy, unofficial runs
    downloads: list[str]
    counts: dict[str, int]


@dataclass(frozen=True)
class _Halves:
    """One build's inputs: ``board_rows`` of the frame and how to run the two halves."""

    rows: pd.DataFrame
    newest: pd.DataFrame
    catalog: Catalog
    config: LeaderboardConfig
    generated_at: datetime
    side_by_side: bool

    def write(
        self,
        root: Path,
        final: Path,
        accuracy: Sequence[AccuracyGroup],
        runs: Sequence[RunView],
    ) -> SiteManifest:
        """Every page, asset and download into ``root``; the manifest (for ``final``)."""
        _write_assets(root)
        writer = pages.PageWriter(root, self.config, self.catalog.prices.tiers, self.generated_at)
        current = (self.newest, self.catalog, writer, accuracy, runs)
        if self.side_by_side:
            # The thread only waits on the child process: the history half has this one.
            with ThreadPoolExecutor(max_workers=1) as waiter:
                pending = waiter.submit(call_in_child, _current_pages, *current)
                board = history_board(self.rows, self.config)
                recipes, histories, found = _history_pages(writer, board)
                try:
                    shown = pending.result()
                except ChildProcessError as err:
                    raise LeaderboardError(
                        f"{final}: the site's worker process failed ({err}); the previous "
                        "site is kept; build it again"
                    ) from err
        else:
            shown = _current_pages(*current)
            board = history_board(self.rows, self.config)
            recipes, histories, found = _history_pages(writer, board)
        overview = pages.write_overview(writer, shown.sections, recipes)
        entries = [
            PageEntry(path=overview, kind="overview", title="Leaderboard"),
            *shown.models,
            *histories,
            *shown.others,
        ]
        counts = shown.counts | {
            "rows": len(board.rows), "episodes": found,
            "open_episodes": int(board.episodes["open"].sum()),
            "unofficial_runs": len(runs), "pages": len(entries),
        }  # fmt: skip
        return SiteManifest(
            out_dir=str(final), generated_at=self.generated_at, pages=tuple(entries),
            downloads=(*shown.downloads, ALERTS), counts=counts,
        )  # fmt: skip


def _current_pages(
    newest: pd.DataFrame,
    catalog: Catalog,
    writer: pages.PageWriter,
    accuracy: Sequence[AccuracyGroup],
    runs: Sequence[RunView],
) -> _CurrentPages:
    """The current half: ``board.current_board`` of ``newest``, and every page and
    download drawn from it but the overview (which links the history pages too)."""
    board = current_board(newest, catalog, writer.config)
    slugs = pages.page_slugs(board)
    table = pages.tier_table(board, writer)
    models, counts = _write_models(writer, board, catalog, slugs)
    others = [
        PageEntry(path=pages.write_table(writer, table, accuracy), kind="table", title="Table"),
        PageEntry(path=pages.write_accuracy(writer, accuracy), kind="accuracy", title="Accuracy"),
        *_write_unofficial(writer, runs),
    ]
    fronts = board.fronts[writer.config.default_stat].drop(columns=["label"])
    attribution, at = writer.config.site.attribution, writer.generated_at
    written = write_downloads(writer.out / "downloads", "leaderboard", table, attribution, at)
    written += write_downloads(writer.out / "downloads", "front", fronts, attribution, at)
    counts |= {
        "current_rows": len(board.current),
        "groups": int(board.tiers.drop_duplicates(["model", "workload", "label"]).shape[0]),
        "tier_values": len(board.tiers), "reached_tier_values": len(board.ranked),
    }  # fmt: skip
    downloads = [p.relative_to(writer.out).as_posix() for p in written]
    sections = pages.overview_sections(writer.config, board, slugs)
    return _CurrentPages(sections, models, others, downloads, counts)


def _history_pages(
    writer: pages.PageWriter, board: HistoryBoard
) -> tuple[dict[str, str], list[PageEntry], int]:
    """The history half's files, every recipe's history page and the alerts document:
    (recipe id -> page slug, the pages' entries, the episodes they show)."""
    recipes = unique_slugs(board.history["recipe_id"].astype(str))
    series = pages.per_recipe(board.history)
    episodes = pages.per_recipe_records(board.episodes)
    entries: list[PageEntry] = []
    shown = 0
    for recipe_id, slug in recipes.items():
        mine = episodes.get(recipe_id, [])
        rel, found = pages.write_history_page(writer, series[recipe_id], mine, recipe_id, slug)
        entries.append(PageEntry(path=rel, kind="history", title=recipe_id))
        shown += found
    alerts = alerts_document(board.episodes, writer.config.regression, writer.generated_at)
    (writer.out / ALERTS).write_text(json.dumps(alerts, indent=1, allow_nan=False))
    return recipes, entries, shown


def _write_models(
    writer: pages.PageWriter,
    board: CurrentBoard,
    catalog: Catalog,
    slugs: dict[tuple[str, str], str],
) -> tuple[list[PageEntry], dict[str, int]]:
    """Every model x workload page; their entries and point counts."""
    entries: list[PageEntry] = []
    counts = {"front_points": 0, "non_optimal_points": 0}
    page_rows = pages.page_rows(board, catalog.prices.tiers)
    for key, slug in sorted(slugs.items()):
        rel, page_counts = pages.write_model_page(writer, page_rows[key], key, slug)
        entries.append(PageEntry(path=rel, kind="model", title=f"{key[0]} · {key[1]}"))
        counts["front_points"] += page_counts["front_points"]
        counts["non_optimal_points"] += page_counts["non_optimal"]
    return entries, counts


def _write_unofficial(writer: pages.PageWriter, runs: Sequence[RunView]) -> list[PageEntry]:
    """The index of unofficial runs (written when there are none, too) and each run's two
    pages."""
    rel = unofficial_pages.write_runs_index(writer, runs)
    entries = [PageEntry(path=rel, kind="unofficial-runs", title="Unofficial runs")]
    for view in runs:
        title = f"PR #{view.entry.pr_number} · run {view.entry.run_id}"
        rel = unofficial_pages.write_run_page(writer, view)
        entries.append(PageEntry(path=rel, kind="unofficial-run", title=title))
        rel = unofficial_pages.write_run_accuracy(writer, view)
        entries.append(PageEntry(path=rel, kind="unofficial-accuracy", title=title))
    return entries


def _write_assets(root: Path) -> None:
    assets = root / "assets"
    assets.mkdir()
    # Bundled from the installed plotly package so pages work offline, opened from disk.
    (assets / "plotly.min.js").write_text(plotly.offline.get_plotlyjs())
    static = resources.files("inferx_pipeline.leaderboard.site") / "static"
    for name in ("site.js", "site.css"):
        (assets / name).write_text((static / name).read_text())
