"""``inferx import-inferencex``: InferenceX's data into ours.

``import-inferencex [masters] MASTER.yaml... --out DIR`` writes master-config entries as
recipes (``masters`` is the default subcommand, so the original spelling still works);
``import-inferencex evals DIR|FILE...`` stores InferenceX eval artifacts as eval scores
(``cli/import_evals``, imported only when it runs: the results store pulls in pandas
and SQLAlchemy, which importing master configs never needs).
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import click

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.cli import LazyGroup
from inferx_pipeline.matrix.import_defaults import cached_import_defaults
from inferx_pipeline.matrix.inferencex import import_masters
from inferx_pipeline.matrix.runners import cached_runners
from inferx_pipeline.settings import Settings


class _MastersByDefault(LazyGroup):
    """A group whose arguments go to ``masters`` unless they name another subcommand."""

    lazy_commands: ClassVar[dict[str, str]] = {
        "evals": "inferx_pipeline.cli.import_evals:evals_command"
    }

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.list_commands(ctx) and args[0] != "--help":
            args = ["masters", *args]
        return super().parse_args(ctx, args)


@click.group("import-inferencex", cls=_MastersByDefault)
def import_inferencex() -> None:
    """Import InferenceX master configs (the default) or eval artifacts."""


@import_inferencex.command("masters")
@click.argument("masters", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True))
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Output directory.")
def masters_command(masters: tuple[Path, ...], out: Path) -> None:
    """Write one recipe per InferenceX config entry; print what our checks would reject."""
    settings = Settings()
    catalog = cached_catalog(settings.catalog_dir)
    runners = cached_runners(settings.catalog_dir)
    defaults = cached_import_defaults(settings.catalog_dir)
    report = import_masters(masters, out, runners, catalog, defaults)
    for finding in report.findings:
        click.echo(f"warning: {finding}")
    click.echo(f"imported {len(report.files)} recipes into {out}")
