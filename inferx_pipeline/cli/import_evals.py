"""``inferx import-inferencex evals``: InferenceX eval artifacts into the results store.

Its own module so that ``import-inferencex masters`` never imports the results store
(``cli/import_inferencex`` loads this one only when ``evals`` runs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.cli.results import identity_options
from inferx_pipeline.matrix.eval_catalog import cached_eval_catalog
from inferx_pipeline.results.evals import write_evals
from inferx_pipeline.results.importers import IdentityHints, ImportContext
from inferx_pipeline.results.importers.inferencex_evals import find_artifacts, import_artifact
from inferx_pipeline.results.store import ResultStore
from inferx_pipeline.settings import Settings


@click.command("evals")
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
