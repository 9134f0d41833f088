"""``inferx images add|list|prune|history``: image partitions, who runs at each, history."""

from __future__ import annotations

from pathlib import Path

import click

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.cli.runs import dagster_home_option
from inferx_pipeline.defs.execute import local_instance
from inferx_pipeline.defs.partitions import (
    add_images,
    image_key,
    images_by_sku,
    images_name,
    images_of_keys,
    remove_images,
    stray_images,
)
from inferx_pipeline.golden import load_golden
from inferx_pipeline.images.changelog import read_changelog
from inferx_pipeline.images.config import load_registry_config
from inferx_pipeline.images.refs import ImageRef
from inferx_pipeline.images.registry import Registries
from inferx_pipeline.images.tracking import runs_at
from inferx_pipeline.matrix.partitions import cells_at, ladders, runnable_cells, runners
from inferx_pipeline.plan.build import MatrixRequest, checked_matrix, load_matrix
from inferx_pipeline.recipes.image_history import image_history
from inferx_pipeline.recipes.loader import LoadedRecipe, load_recipes
from inferx_pipeline.settings import Settings

STRAY = "(no recipe runs at this image; `inferx images prune` removes it)"


@click.group()
def images() -> None:
    """Image partitions (per SKU): add engine images to measure, list them, prune strays."""


@images.command()
@dagster_home_option
@click.argument("refs", nargs=-1, required=True)
def add(dagster_home: Path | None, refs: tuple[str, ...]) -> None:
    """Register image references as partitions of the SKUs whose recipes run at them.

    Exits 2, adding nothing, naming a reference that no recipe runs at (no SKU could
    offer it) and what the recipes run instead.
    """
    for ref in refs:
        ImageRef.parse(ref)  # a bad reference is an error before anything is written
    settings = Settings()
    jobs = load_matrix(MatrixRequest(paths=()), settings).jobs
    cells = runnable_cells(jobs, refs)
    instance = local_instance(dagster_home or settings.dagster_home)
    try:
        new = add_images(instance, cells)
    finally:
        instance.dispose()
    per_sku = images_by_sku(cells)
    for ref in refs:
        for sku in sorted(sku for sku, images_of_sku in per_sku.items() if ref in images_of_sku):
            added = ref in new.get(sku, ())
            done = f"added as {image_key(ref)}" if added else "already a partition"
            click.echo(f"{ref}: {sku}: {done}")


@images.command("list")
@dagster_home_option
def list_images(dagster_home: Path | None) -> None:
    """Every SKU's image partitions (key, reference) and the recipes on it that run at each."""
    settings = Settings()
    jobs = load_matrix(MatrixRequest(paths=()), settings).jobs
    instance = local_instance(dagster_home or settings.dagster_home)
    try:
        keys = {
            sku: images_of_keys(instance, sku, instance.get_dynamic_partitions(images_name(sku)))
            for sku in ladders(jobs)
        }
    finally:
        instance.dispose()
    for sku, images_of_sku in sorted(keys.items()):
        for key, image in sorted(images_of_sku.items()):
            runs = ", ".join(runners(jobs, sku, image)) or STRAY
            click.echo(f"{sku}\t{key}\t{image}\t{runs}")


@images.command()
@dagster_home_option
@click.option("--dry-run", is_flag=True, help="List the stray partitions; remove nothing.")
def prune(dagster_home: Path | None, dry_run: bool) -> None:
    """Remove image partitions that no recipe of their SKU runs at (strays).

    Looks at every catalog SKU's image partitions. Their materializations stay (and so do
    the runs and results measured there). Exits 2, removing nothing, while a recipe is
    invalid: its images would look like strays.
    """
    settings = Settings()
    jobs = checked_matrix(MatrixRequest(paths=()), settings).jobs
    skus = [*sorted(cached_catalog(settings.catalog_dir).skus), *ladders(jobs)]
    instance = local_instance(dagster_home or settings.dagster_home)
    try:
        strays = stray_images(instance, skus, jobs)
        if not dry_run:
            remove_images(instance, strays)
    finally:
        instance.dispose()
    done = "would remove" if dry_run else "removed"
    for sku, found in sorted(strays.items()):
        for key, image in sorted(found.items()):
            click.echo(f"{sku}\t{key}\t{image}\t{done}")
    if not strays:
        click.echo("no stray image partitions")


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
        request = MatrixRequest(paths=(loaded.source,))
        cells = cells_at(load_matrix(request, settings).jobs, runnable)
        instance = local_instance(dagster_home or settings.dagster_home)
        try:
            new = add_images(instance, cells)
        finally:
            instance.dispose()
        click.echo(f"added {sum(len(images) for images in new.values())} image partitions")


def _loaded(settings: Settings) -> list[LoadedRecipe]:
    return load_recipes(
        (settings.recipes_dir,),
        catalog=cached_catalog(settings.catalog_dir),
        golden=load_golden(settings.golden_dir),
    ).recipes
