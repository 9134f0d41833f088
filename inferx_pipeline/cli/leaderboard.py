"""``inferx leaderboard build|serve``: write the static site from the results DB, or serve it."""

from __future__ import annotations

from pathlib import Path

import click

from inferx_pipeline.leaderboard.build import build_site_from_store
from inferx_pipeline.leaderboard.serve import SiteServer
from inferx_pipeline.settings import Settings


@click.group()
def leaderboard() -> None:
    """Build the static leaderboard site from stored results, or serve it on 127.0.0.1."""


@leaderboard.command()
@click.option("--db", "db_url", help="Results database URL (default: the settings' SQLite file).")
@click.option(
    "--out", type=click.Path(path_type=Path), help="Site directory (default .inferx/site)."
)
def build(db_url: str | None, out: Path | None) -> None:
    """Read results, compute fronts, tiers, costs and history, and write the site."""
    settings = Settings()
    target = out or settings.site_dir
    manifest = build_site_from_store(db_url or settings.results_url, target, settings.catalog_dir)
    counts = manifest.counts
    click.echo(
        f"wrote {counts['pages']} pages to {target} ({counts['rows']} rows, "
        f"{counts['groups']} groups, {counts['front_points']} front points, "
        f"{counts['open_episodes']} open regression episodes)"
    )


@leaderboard.command()
@click.option("--port", type=int, default=0, show_default=True, help="0 picks a free port.")
@click.option("--dir", "directory", type=click.Path(path_type=Path), help="Site directory.")
def serve(port: int, directory: Path | None) -> None:
    """Serve the built site on 127.0.0.1 until interrupted."""
    server = SiteServer(directory or Settings().site_dir, port)
    click.echo(f"serving {server.url} (Ctrl-C to stop)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        click.echo("stopped")
