"""``inferx images add|list|history``: image partitions, who runs at each, a recipe's history."""

from __future__ import annotations

from pathlib import Path

import click

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.cli.runs import dagster_home_option
from inferx_pipeline.defs.execute import local_instance
from inferx_pipeline.defs.partitions import IMAGES_NAME, add_images
from inferx_pipeline.golden import load_golden
from inferx_pipeline.images.changelog import read_changelog
from inferx_pipeline.images.config import load_registry_config
from inferx_pipeline.images.history import image_history
from inferx_pipeline.images.refs import ImageRef
from inferx_pipeline.images.registry import Registries
from inferx_pipeline.images.tracking import runs_at
from inferx_pipeline.matrix.build import MatrixRequest, load_matrix
from inferx_pipeline.matrix.partitions import admits
from inferx_pipeline.recipes.loader import LoadedRecipe, load_recipes
from inferx_pipeline.settings import Settings


@click.group()
def images() -> None:
    """Image partitions: add engine images to measure, list them."""


@images.command()
@dagster_home_option
@click.argument("refs", nargs=-1, required=True)
def add(dagster_home: Path | None, refs: tuple[str, ...]) -> None:
    """Register image references as partitions of every sweep asset."""
    for ref in refs:
        ImageRef.parse(ref)  # a bad reference is an error before anything is written
    instance = local_instance(dagster_home or Settings().dagster_home)
    try:
        new = add_images(instance, refs)
    finally:
        instance.dispose()
    for ref in refs:
        click.echo(f"{ref}: {'added' if ref in new else 'already a partition'}")


@images.command("list")
@dagster_home_option
def list_images(dagster_home: Path | None) -> None:
    """Every image partition and the recipes that run at it (pinned or tracked)."""
    settings = Settings()
    instance = local_instance(dagster_home or settings.dagster_home)
    try:
        keys = instance.get_dynamic_partitions(IMAGES_NAME)
    finally:
        instance.dispose()
    jobs = load_matrix(MatrixRequest(paths=()), settings).jobs
    for image in sorted(keys):
        recipes = sorted({job.recipe_id for job in jobs if admits(job, image)})
        click.echo(f"{image}\t{', '.join(recipes) or '(no recipe runs at this image)'}")


@images.command()
@dagster_home_option
@click.option("--recipe", "recipe_id", required=True, help="Recipe id.")
@click.option(
    "--changelog",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="An InferenceX perf-changelog.yaml to read image upgrades from.",
)
@click.option("--registry", is_flag=True, help="Also list the registry's tags the recipe runs at.")
@click.option("--add", is_flag=True, help="Register every image the recipe runs at as a partition.")
def history(
    dagster_home: Path | None, recipe_id: str, changelog: Path | None, registry: bool, add: bool
) -> None:
    """A recipe's images over time: pinned, git history, a changelog, the registry.

    Prints source, image, when, reference (commit, PR, digest) and whether the recipe runs
    at the image (its pinned tag or its engine.track globs); a backfill can replay those.
    """
    settings = Settings()
    loaded = next((item for item in _loaded(settings) if item.recipe.id == recipe_id), None)
    if loaded is None:
        raise click.UsageError(f"no valid recipe {recipe_id!r} under {settings.recipes_dir}")
    recipe = loaded.recipe
    git_repo = settings.root if (settings.root / ".git").exists() else None
    registries = Registries(load_registry_config(settings.registries)) if registry else None
    try:
        rows = image_history(
            recipe,
            repo=git_repo,
            chain=(loaded.source, *loaded.chain) if git_repo else (),
            changelog=read_changelog(changelog) if changelog else (),
            registry=registries.client_for(ImageRef.parse(recipe.engine.image))
            if registries
            else None,
        )
    finally:
        if registries is not None:
            registries.close()
    pinned = ImageRef.parse(recipe.engine.image)
    runnable = []
    for row in rows:
        runs = runs_at(recipe.engine.track, pinned, ImageRef.parse(row.image))
        runnable += [row.image] if runs else []
        when = row.when.date().isoformat() if row.when else "-"
        verdict = "runs" if runs else "not tracked"
        click.echo(f"{row.source}\t{row.image}\t{when}\t{row.ref or '-'}\t{verdict}")
    if add:
        instance = local_instance(dagster_home or settings.dagster_home)
        try:
            new = add_images(instance, runnable)
        finally:
            instance.dispose()
        click.echo(f"added {len(new)} image partitions")


def _loaded(settings: Settings) -> list[LoadedRecipe]:
    return load_recipes(
        (settings.recipes_dir,),
        catalog=cached_catalog(settings.catalog_dir),
        golden=load_golden(settings.golden_dir),
    ).recipes
