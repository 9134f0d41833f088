"""``inferx validate [PATHS...]``: load every recipe, run the pre-GPU rules, list all problems."""

from __future__ import annotations

from pathlib import Path

import click

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.golden import load_golden
from inferx_pipeline.matrix.crosscheck import validate_recipes
from inferx_pipeline.matrix.runners import cached_runners
from inferx_pipeline.recipes.policy.data import cached_policy
from inferx_pipeline.settings import Settings


def _relative(path: Path) -> Path:
    # Error lines read best relative to where the person stands.
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
def validate(paths: tuple[Path, ...]) -> None:
    """Validate recipes (default: the recipes/ directory) before any GPU starts.

    Prints every error as FILE:LINE:COL: FIELD: MESSAGE [RULE], then warnings, and
    `OK n recipes` when there is no error. Besides each recipe's rules it checks runner
    labels, that every recipe expands, and that no two jobs are identical; on recipes
    imported from InferenceX it says which findings InferenceX itself accepts. Exits 1
    when any recipe is invalid.
    """
    settings = Settings()
    result = validate_recipes(
        paths or (_relative(settings.recipes_dir),),
        catalog=cached_catalog(settings.catalog_dir),
        golden=load_golden(settings.golden_dir),
        policy=cached_policy(settings.catalog_dir),
        runners=cached_runners(settings.catalog_dir),
    )
    for error in result.errors:
        click.echo(str(error))
    for warning in result.warnings:
        click.echo(f"warning: {warning}")
    if result.errors:
        raise SystemExit(1)
    click.echo(f"OK {len(result.recipes)} recipes")
