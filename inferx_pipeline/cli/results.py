"""``inferx results``: ingest result files, export stored results, list the quarantine,
show a row's artifact paths."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import click

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.results.export import EXPORTERS
from inferx_pipeline.results.filters import ResultFilter
from inferx_pipeline.results.importers import IMPORTERS, IdentityHints, ImportContext
from inferx_pipeline.results.importers.identity import IDENTITY_FIELDS
from inferx_pipeline.results.ingest import ingest
from inferx_pipeline.results.record import JobIdentity
from inferx_pipeline.results.store import IngestReport, ResultStore
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.artifacts import ArtifactStore

# identity field -> click type; every other field is a string option.
_INT_FIELDS = ("isl", "osl", "tp", "ep", "pp", "pcp", "draft_tokens", "conc")
_CHOICE_FIELDS = ("scenario", "kv_offload", "spec_method", "acceptance_mode", "thinking")
# export filter option -> ResultFilter field
_FILTERS = {"model": "models", "sku": "skus", "scenario": "scenarios", "framework": "frameworks"}
_FILTERS |= {"precision": "precisions", "vendor": "vendors", "recipe": "recipe_ids"}


def identity_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """One ``--<field>`` option per JobIdentity field (values for files that lack them)."""
    for name in reversed(IDENTITY_FIELDS):
        info = JobIdentity.model_fields[name]
        flag = "--" + name.replace("_", "-")
        if name == "dp_attn":
            option = click.option(f"{flag}/--no-dp-attn", default=None, help=info.description)
        elif name in _CHOICE_FIELDS:
            choices = click.Choice(get_args(info.annotation))
            option = click.option(flag, name, type=choices, default=None, help=info.description)
        else:
            kind = int if name in _INT_FIELDS else float if name == "target_al" else str
            option = click.option(flag, name, type=kind, default=None, help=info.description)
        command = option(command)
    return command


def _store(database_url: str | None) -> ResultStore:
    return ResultStore(database_url or Settings().results_url)


@click.group("results")
def results() -> None:
    """The results database: ingest, export, quarantine, a row's artifacts."""


@results.command("ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--source", type=click.Choice(list(IMPORTERS)), help="Format; default: by keys.")
@click.option("--database-url", help="Results database URL; default INFERX_DATABASE_URL.")
@click.option("--run-id", help="Run id for files that carry none.")
@click.option("--attempt", type=click.IntRange(min=1), help="Attempt number.")
@click.option("--simulated/--real", default=None, help="Whether the engine was simulated.")
@click.option("--official/--unofficial", default=None, help="Real GPU run on an official image.")
@click.option("--strict", is_flag=True, help="Exit 1 when anything was quarantined.")
@identity_options
def ingest_command(
    paths: tuple[Path, ...],
    source: Any,
    database_url: str | None,
    run_id: str | None,
    attempt: int | None,
    simulated: bool | None,
    official: bool | None,
    strict: bool,
    **identity: Any,
) -> None:
    """Ingest result JSON files (or directories of them); bad files are quarantined."""
    hints = IdentityHints(
        identity={k: v for k, v in identity.items() if v is not None},
        run_id=run_id,
        attempt=attempt,
        simulated=simulated,
        official=official,
    )
    context = ImportContext.from_catalog(cached_catalog(Settings().catalog_dir), hints)
    report = ingest(list(paths), _store(database_url), context, source)
    _print_report(report)
    if strict and report.quarantined:
        raise click.exceptions.Exit(1)


def _print_report(report: IngestReport) -> None:
    click.echo(
        f"ingested {report.written} results ({report.skipped_existing} already stored), "
        f"quarantined {report.quarantined}"
    )
    for rejection in report.rejections:
        click.echo(f"  {rejection.path}: {rejection.code}: {rejection.reason}")


@results.command("export")
@click.option(
    "--format", "fmt", type=click.Choice(list(EXPORTERS)), default="csv", show_default=True
)
@click.option("--output", "-o", type=click.Path(path_type=Path), help="File; default stdout.")
@click.option("--database-url", help="Results database URL; default INFERX_DATABASE_URL.")
@click.option("--valid-only", is_flag=True, help="Only valid results.")
@click.option("--model", multiple=True, help="Hugging Face model id (repeatable).")
@click.option("--sku", multiple=True, help="GPU SKU (repeatable).")
@click.option("--scenario", multiple=True, help="fixed-seq-len | agentic-coding.")
@click.option("--framework", multiple=True, help="Engine (repeatable).")
@click.option("--precision", multiple=True, help="Precision (repeatable).")
@click.option("--vendor", multiple=True, help="nvidia | amd (repeatable).")
@click.option("--recipe", multiple=True, help="Recipe id (repeatable).")
def export_command(
    fmt: str, output: Path | None, database_url: str | None, valid_only: bool, **filters: Any
) -> None:
    """Write stored results as InferenceX agg rows, CSV or JSON."""
    selected = {_FILTERS[k]: tuple(v) for k, v in filters.items() if v}
    frame = _store(database_url).read_frame(ResultFilter(valid_only=valid_only, **selected))
    text = EXPORTERS[fmt](frame)
    if output is None:
        click.echo(text)
    else:
        output.write_text(text)
        click.echo(f"wrote {len(frame)} results to {output}")


@results.command("quarantine")
@click.option("--database-url", help="Results database URL; default INFERX_DATABASE_URL.")
def quarantine_command(database_url: str | None) -> None:
    """List rejected inputs and why they were rejected."""
    entries = _store(database_url).quarantine()
    for entry in entries:
        click.echo(f"{entry.code}\t{entry.path}\t{entry.reason}")
    click.echo(f"{len(entries)} quarantined")


@results.command("artifacts")
@click.argument("row")
@click.option("--database-url", help="Results database URL; default INFERX_DATABASE_URL.")
@click.option(
    "--artifacts-dir", type=click.Path(path_type=Path), help="Default: the settings' artifacts."
)
def artifacts_command(row: str, database_url: str | None, artifacts_dir: Path | None) -> None:
    """Paths of the artifacts of ROW: a result id or its prefix, a job id, or the result
    hash a leaderboard row links to (lo_/hi_artifact_sha256)."""
    store = ArtifactStore(artifacts_dir or Settings().artifacts_dir)
    found = _store(database_url).artifacts_of(row)
    if not found:
        raise click.ClickException(f"no stored result has result id {row}..., job id or hash {row}")
    for result_id, artifacts in found.items():
        click.echo(result_id)
        for name, sha in sorted(artifacts.items()):
            path = store.path(sha)
            click.echo(f"  {name}\t{path}" + ("" if path.is_file() else "\t(not in this store)"))
