"""``inferx import-inferencex MASTER.yaml... --out DIR``: master-config entries -> recipes."""

from __future__ import annotations

from pathlib import Path

import click

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.matrix.inferencex import import_masters
from inferx_pipeline.matrix.runners import cached_runners
from inferx_pipeline.settings import Settings


@click.command("import-inferencex")
@click.argument("masters", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True))
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Output directory.")
def import_inferencex(masters: tuple[Path, ...], out: Path) -> None:
    """Write one recipe per InferenceX config entry; print what our checks would reject."""
    settings = Settings()
    catalog = cached_catalog(settings.catalog_dir)
    report = import_masters(masters, out, cached_runners(settings.catalog_dir), catalog)
    for finding in report.findings:
        click.echo(f"warning: {finding}")
    click.echo(f"imported {len(report.files)} recipes into {out}")
