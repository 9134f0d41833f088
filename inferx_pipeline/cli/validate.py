"""``inferx validate [PATHS...]``: load every recipe, run the pre-GPU rules, list all problems."""

from __future__ import annotations

import contextlib
from pathlib import Path

import click

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.conformance.argv import ArgvCache, argv_findings, host_parsers
from inferx_pipeline.errors import InferxError
from inferx_pipeline.golden import load_golden
from inferx_pipeline.launch.local import load_local_host
from inferx_pipeline.matrix.eval_catalog import cached_eval_catalog
from inferx_pipeline.matrix.evals import load_eval_policies
from inferx_pipeline.matrix.expand import expand
from inferx_pipeline.matrix.runners import cached_runners
from inferx_pipeline.plan.crosscheck import validate_recipes
from inferx_pipeline.recipes.findings import Finding
from inferx_pipeline.recipes.loader import LoadResult
from inferx_pipeline.recipes.policy.data import cached_policy
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.backends import engine_specs


def _relative(path: Path) -> Path:
    # Error lines read best relative to where the person stands.
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def _argv_findings(result: LoadResult, settings: Settings, host_file: Path) -> list[Finding]:
    # Rule engine-argv: each argv parsed by its engine where the host has the engine, for
    # every schema-valid recipe that expands (one failing another rule is parsed too).
    parsers = host_parsers(
        load_local_host(host_file), ArgvCache(settings.state / "argv-checks.json")
    )
    if not parsers:
        return []
    catalog = cached_catalog(settings.catalog_dir)
    golden, runners = load_golden(settings.golden_dir), cached_runners(settings.catalog_dir)
    policies = load_eval_policies(settings.catalog_dir)
    evals = cached_eval_catalog(settings.catalog_dir)
    jobs = []
    for loaded in result.parsed:
        with contextlib.suppress(InferxError):  # reported by the matrix rule already
            jobs += expand(
                [loaded], golden=golden, catalog=catalog, evals="all", runners=runners,
                duplicates="keep", eval_policies=policies, eval_catalog=evals,
            )  # fmt: skip
    return argv_findings(result.parsed, jobs, engine_specs(catalog), parsers, catalog)


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--host-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Parse every server argv with the engines this host file names (rule engine-argv) "
    "[default: STATE/local-host.yaml when present; scripts/cpu-host writes one].",
)
def validate(paths: tuple[Path, ...], host_file: Path | None) -> None:
    """Validate recipes (default: the recipes/ directory) before any GPU starts.

    Prints every error as FILE:LINE:COL: FIELD: MESSAGE [RULE], then warnings, and
    `OK n recipes` when there is no error. Besides each recipe's rules it checks runner
    labels, that every recipe expands, and that no two jobs are identical; on recipes
    imported from InferenceX it says which findings InferenceX itself accepts. With a
    host file naming an engine's program, every argv is also parsed by that engine's own
    parser (rule engine-argv; verdicts cached under STATE). Exits 1 when any recipe is
    invalid.
    """
    settings = Settings()
    result = validate_recipes(
        paths or (_relative(settings.recipes_dir),),
        catalog=cached_catalog(settings.catalog_dir),
        golden=load_golden(settings.golden_dir),
        policy=cached_policy(settings.catalog_dir),
        runners=cached_runners(settings.catalog_dir),
        evals=cached_eval_catalog(settings.catalog_dir),
    )
    host_file = host_file or settings.local_host_file
    if result.parsed and host_file.is_file():
        found = _argv_findings(result, settings, host_file)
        rejected = [finding for finding in found if finding.is_error]
        result.errors.extend(rejected)
        result.warnings.extend(finding for finding in found if not finding.is_error)
        failed = {finding.recipe for finding in rejected}
        result.recipes = [loaded for loaded in result.recipes if loaded.source not in failed]
    for error in result.errors:
        click.echo(str(error))
    for warning in result.warnings:
        click.echo(f"warning: {warning}")
    if result.errors:
        raise SystemExit(1)
    click.echo(f"OK {len(result.recipes)} recipes")
