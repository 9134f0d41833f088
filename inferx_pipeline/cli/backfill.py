"""``inferx backfill --recipe ID --images TAG...``: replay recipes over other image tags.

Each image is a full reference or a bare tag of the selected recipes' own repository.
Every selected job runs at every image its recipe admits (its pinned tag, or a tag its
``engine.track`` globs match), one Dagster run per SKU x image x range of concurrencies;
the leaderboard's history page then shows one result per image. An image no selected
recipe admits is an error that says which rule to widen.
"""

from __future__ import annotations

import click

from inferx_pipeline.cli.launch_flags import launch_options
from inferx_pipeline.cli.runs import dagster_options, run_cells
from inferx_pipeline.cli.selection import pop_selection, selection_flags
from inferx_pipeline.images.refs import ImageRef
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.partitions import admits, cells_at
from inferx_pipeline.plan.build import MatrixRequest, build_matrix
from inferx_pipeline.settings import Settings


def _images(jobs: list[BenchmarkJob], given: tuple[str, ...]) -> list[str]:
    """Full references: a bare tag becomes a tag of each selected recipe's repository."""
    pinned = sorted({job.engine.image for job in jobs})
    images = []
    for image in given:
        if ":" in image or "/" in image or "@" in image:
            images.append(image)
        else:
            images.extend(ImageRef.parse(ref).with_tag(image) for ref in pinned)
    return list(dict.fromkeys(images))


def _check_admitted(jobs: list[BenchmarkJob], images: list[str]) -> None:
    for image in images:
        if not any(admits(job, image) for job in jobs):
            rules = sorted({f"{job.recipe_id} (pinned {job.engine.image})" for job in jobs})
            raise click.UsageError(
                f"image {image} is not run by any selected recipe: {'; '.join(rules)}; give a "
                "tag of the recipe's repository that its engine.track globs match, or add one"
            )


@click.command()
@selection_flags
@click.option(
    "--images",
    "given",
    multiple=True,
    required=True,
    help="Image reference or bare tag (repeatable).",
)
@launch_options
@dagster_options
def backfill(given: tuple[str, ...], **flags: object) -> None:
    """Measure the selected recipes (--recipe, ...) at each of --images."""
    settings = Settings()
    selection = pop_selection(flags)
    if not selection.recipes:
        raise click.UsageError("name the recipes to replay with --recipe ID (globs allowed)")
    jobs = build_matrix(MatrixRequest(paths=(), selection=selection), settings)
    if not jobs:
        raise click.UsageError("the selection matches no job; see `inferx matrix` for the jobs")
    images = _images(jobs, given)
    _check_admitted(jobs, images)
    tags = {"inferx/backfill-recipes": ",".join(selection.recipes)}
    run_cells(settings, list(cells_at(jobs, images)), flags, reason="backfill", tags=tags)
