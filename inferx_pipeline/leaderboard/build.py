"""Result rows (a DataFrame or the results store) -> the static site directory.

The site is built in a new folder of ``<out>.builds`` and swapped in at the end by
renaming a symlink over ``out`` (``builds.py``), so a reader never sees half a site, never
finds ``out`` missing, and pages of vanished groups do not linger. A directory that is
not a previous build (no ``manifest.json``) is never replaced. One build of a site runs
at a time (a lock on ``<out>.lock``): a second waits, then builds afresh.

Rows of pull requests' unofficial runs never reach the official pages: they are split off
first (``unofficial.split_runs``) and make the pages under ``unofficial/``
(``site/unofficial_pages.py``), each run beside its official baseline.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Literal

import pandas as pd
import plotly.offline
from pydantic import Field

from inferx_pipeline.catalog import Catalog, cached_catalog
from inferx_pipeline.errors import LeaderboardError
from inferx_pipeline.leaderboard.accuracy import AccuracyGroup
from inferx_pipeline.leaderboard.board import Leaderboard, compute_leaderboard
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
) -> SiteManifest:
    """Compute the leaderboard of ``frame`` (ResultRecord columns) and write the site to ``out``.

    ``frame`` and ``latest`` are as for ``board.compute_leaderboard``; ``accuracy`` fills
    the accuracy page (``leaderboard.accuracy``). Rows of pull requests' runs (with a
    ``pr_number``) in ``frame`` or ``latest`` are left out of the official pages; they
    make the unofficial-run pages, compared with ``frame``'s official rows, unless
    ``unofficial`` gives those pages' rows, baseline and evals. Raises LeaderboardError
    when a frame lacks columns or ``out`` exists but is not a previous site build.
    ``generated_at`` defaults to now (UTC).
    """
    frame, found = split_runs(frame)
    latest = split_runs(latest)[0] if latest is not None else None
    runs = run_views(
        unofficial if unofficial is not None else UnofficialRuns(rows=found, baseline=frame), config
    )
    board = compute_leaderboard(frame, catalog, config, latest)
    at = generated_at or datetime.now(UTC)
    return write_site(board, out, catalog, config, at, accuracy, runs)


def build_site_from_store(
    url: str, out: Path, catalog_dir: Path, generated_at: datetime | None = None
) -> SiteManifest:
    """Read what the leaderboard needs from the results store at ``url`` (the unofficial
    runs too: ``source.read_unofficial``) and build the site."""
    # The DB layer only when asked for.
    from inferx_pipeline.leaderboard.source import (
        read_accuracy,
        read_board_frames,
        read_unofficial,
    )
    from inferx_pipeline.results.store import ResultStore

    config = load_leaderboard_config(catalog_dir)
    store = ResultStore(url)
    try:
        history, latest = read_board_frames(store, config)
        accuracy = read_accuracy(store)
        unofficial = read_unofficial(store, config.default_stat)
    finally:
        store.close()
    catalog = cached_catalog(catalog_dir)
    return build_site(history, out, catalog, config, generated_at, latest, accuracy, unofficial)


def write_site(
    board: Leaderboard,
    out: Path,
    catalog: Catalog,
    config: LeaderboardConfig,
    generated_at: datetime,
    accuracy: Sequence[AccuracyGroup] = (),
    runs: Sequence[RunView] = (),
) -> SiteManifest:
    """Write every page, asset and download of ``board`` and the pages of the unofficial
    ``runs`` (``unofficial.run_views``), then swap the directory in."""
    with file_lock(out.with_name(out.name + ".lock")):
        return _write_locked(board, out, catalog, config, generated_at, accuracy, runs)


def _write_locked(
    board: Leaderboard,
    out: Path,
    catalog: Catalog,
    config: LeaderboardConfig,
    generated_at: datetime,
    accuracy: Sequence[AccuracyGroup],
    runs: Sequence[RunView],
) -> SiteManifest:
    if out.exists() and any(out.iterdir()) and not (out / MANIFEST).is_file():
        raise LeaderboardError(
            f"{out}: exists and is not a leaderboard build (no {MANIFEST}); "
            "choose an empty or new --out directory"
        )
    staging = new_build(out)
    manifest = _write_all(board, staging, catalog, config, generated_at, out, accuracy, runs)
    (staging / MANIFEST).write_text(manifest.model_dump_json(indent=1))
    activate(out, staging)
    return manifest


def _write_all(
    board: Leaderboard,
    root: Path,
    catalog: Catalog,
    config: LeaderboardConfig,
    generated_at: datetime,
    final: Path,
    accuracy: Sequence[AccuracyGroup],
    runs: Sequence[RunView],
) -> SiteManifest:
    _write_assets(root)
    writer = pages.PageWriter(root, config, catalog.prices.tiers, generated_at)
    slugs = pages.page_slugs(board)
    recipes = unique_slugs(board.history["recipe_id"].astype(str))
    table = pages.tier_table(board, writer)
    models, counts = _write_models(writer, board, catalog, slugs)
    histories, episode_count = _write_histories(writer, board, recipes)
    overview = pages.write_overview(writer, board, slugs, recipes)
    entries = [
        PageEntry(path=overview, kind="overview", title="Leaderboard"),
        *models,
        *histories,
        PageEntry(path=pages.write_table(writer, table, accuracy), kind="table", title="Table"),
        PageEntry(path=pages.write_accuracy(writer, accuracy), kind="accuracy", title="Accuracy"),
        *_write_unofficial(writer, runs),
    ]
    downloads = _write_data(board, root, table, config, generated_at)
    counts |= {
        "rows": len(board.rows), "current_rows": len(board.current),
        "groups": int(board.tiers.drop_duplicates(["model", "workload", "label"]).shape[0]),
        "tier_values": len(board.tiers), "reached_tier_values": len(board.ranked),
        "episodes": episode_count, "open_episodes": int(board.episodes["open"].sum()),
        "unofficial_runs": len(runs), "pages": len(entries),
    }  # fmt: skip
    return SiteManifest(
        out_dir=str(final), generated_at=generated_at, pages=tuple(entries),
        downloads=tuple(downloads), counts=counts,
    )  # fmt: skip


def _write_models(
    writer: pages.PageWriter,
    board: Leaderboard,
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


def _write_histories(
    writer: pages.PageWriter, board: Leaderboard, recipes: dict[str, str]
) -> tuple[list[PageEntry], int]:
    """Every recipe's history page; their entries and the episodes they show."""
    entries: list[PageEntry] = []
    series, episodes = pages.per_recipe(board.history), pages.per_recipe_records(board.episodes)
    episode_count = 0
    for recipe_id, slug in recipes.items():
        mine = episodes.get(recipe_id, [])
        rel, found = pages.write_history_page(writer, series[recipe_id], mine, recipe_id, slug)
        entries.append(PageEntry(path=rel, kind="history", title=recipe_id))
        episode_count += found
    return entries, episode_count


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


def _write_data(
    board: Leaderboard,
    root: Path,
    table: pd.DataFrame,
    config: LeaderboardConfig,
    generated_at: datetime,
) -> list[str]:
    attribution = config.site.attribution
    fronts = board.fronts[config.default_stat].drop(columns=["label"])
    written = write_downloads(root / "downloads", "leaderboard", table, attribution, generated_at)
    written += write_downloads(root / "downloads", "front", fronts, attribution, generated_at)
    alerts = alerts_document(board.episodes, config.regression, generated_at)
    (root / "alerts.json").write_text(json.dumps(alerts, indent=1, allow_nan=False))
    return [p.relative_to(root).as_posix() for p in written] + ["alerts.json"]
