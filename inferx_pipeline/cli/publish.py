"""``inferx publish``: ingest every recorded sweep result into the results DB, build the site."""

from __future__ import annotations

from pathlib import Path

import click

from inferx_pipeline.pipeline import publish
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.artifacts import ArtifactStore


@click.command("publish")
@click.option("--artifacts-dir", type=click.Path(path_type=Path), help="Default .inferx/artifacts.")
@click.option("--db", "db_url", help="Results database URL (default: the settings' SQLite file).")
@click.option(
    "--out", type=click.Path(path_type=Path), help="Site directory (default .inferx/site)."
)
def publish_command(artifacts_dir: Path | None, db_url: str | None, out: Path | None) -> None:
    """Ingest the sweep artifacts (idempotent), build the leaderboard; print index.html's path."""
    settings = Settings()
    artifacts = ArtifactStore(artifacts_dir or settings.artifacts_dir)
    done = publish(
        artifacts, db_url or settings.results_url, out or settings.site_dir, settings.catalog_dir
    )
    ingest, counts = done.ingest, done.site.counts
    click.echo(
        f"ingested {ingest.written} results ({ingest.skipped_existing} already stored), "
        f"quarantined {ingest.quarantined}"
    )
    for rejection in ingest.rejections + done.evals.rejections:
        click.echo(f"  {rejection.path}: {rejection.code}: {rejection.reason}")
    click.echo(
        f"ingested {done.evals.written} eval scores ({done.evals.skipped_existing} already stored)"
    )
    click.echo(
        f"wrote {counts['pages']} pages ({counts['rows']} rows, "
        f"{counts['front_points']} front points) to {done.site.out_dir}"
    )
    click.echo(str(done.index))
