"""``inferx import-inferencex``: InferenceX's data into ours.

``import-inferencex [masters] MASTER.yaml... --out DIR`` writes master-config entries as
recipes (``masters`` is the default subcommand, so the original spelling still works);
``import-inferencex evals DIR|FILE...`` stores InferenceX eval artifacts as eval scores.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.cli.results import identity_options
from inferx_pipeline.matrix.eval_catalog import cached_eval_catalog
from inferx_pipeline.matrix.import_defaults import cached_import_defaults
from inferx_pipeline.matrix.inferencex import import_masters
from inferx_pipeline.matrix.runners import cached_runners
from inferx_pipeline.results.evals import write_evals
from inferx_pipeline.results.importers import IdentityHints, ImportContext
from inferx_pipeline.results.importers.inferencex_evals import find_artifacts, import_artifact
from inferx_pipeline.results.store import ResultStore
from inferx_pipeline.settings import Settings


class _MastersByDefault(click.Group):
    """A group whose arguments go to ``masters`` unless they name another subcommand."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] != "--help":
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


@import_inferencex.command("evals")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--database-url", help="Results database URL; default INFERX_DATABASE_URL.")
@click.option("--run-id", help="Run id; default: one per results file, from its hash.")
@identity_options
def evals_command(paths: tuple[Path, ...], database_url: str | None, run_id: str | None,
                  **identity: Any) -> None:  # fmt: skip
    """Store InferenceX eval artifacts (directories holding meta_env.json and lm-eval's
    results_*.json) as eval scores; identity flags fill what they lack (--image).
    Importing again adds nothing; a malformed artifact stores nothing and names its
    file and field."""
    settings = Settings()
    hints = IdentityHints(identity={k: v for k, v in identity.items() if v is not None},
                          run_id=run_id)  # fmt: skip
    context = ImportContext.from_catalog(cached_catalog(settings.catalog_dir), hints)
    evals = cached_eval_catalog(settings.catalog_dir)
    records = [import_artifact(found, context, evals) for found in find_artifacts(paths)]
    store = ResultStore(database_url or settings.results_url)
    try:
        report = write_evals(store, records)
    finally:
        store.close()
    click.echo(f"imported {report.written} eval scores ({report.skipped_existing} already stored)")
