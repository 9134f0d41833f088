"""Sensors for what changed: new image tags, golden curves, merged recipe changes.

Each keeps a cursor, requests exactly the affected partitions (one run per SKU x image
x range of concurrencies, see ``defs/requests.py``), registers the images it requests
as partitions of the SKUs that run them, and says why in the run tags. The first tick of
each (no cursor, or an empty one, as the UI's tick preview sends) records where things
stand and requests nothing; a tick with no change requests nothing.

- ``new_image_tags``: for each image repository that tracking recipes use, the tag list
  from the registry (Registry HTTP API v2); a tag not seen before that a recipe
  ``follows`` (its ``engine.track`` globs, and newer than its pin when it says so) ->
  that recipe's partitions at the new image. Cursor: repository -> tags seen.
- ``golden_curve_changes``: content hash per curve file (the cursor); a changed curve ->
  the partitions of the recipes that use it (synthetic acceptance), at their pinned image.
- ``merged_recipe_changes``: a watched git repository's branch (fetched each tick); for
  each new commit, oldest first, the recipes its changed files affect (a recipe, a
  fragment it extends, a curve it uses), read as of that commit -> their partitions at
  their pinned image. Cursor: the last commit seen; run keys carry the commit SHA.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

import dagster as dg

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.defs.partitions import add_requests
from inferx_pipeline.defs.requests import cell_requests
from inferx_pipeline.defs.resources import ProjectResource, RecipeRepoResource
from inferx_pipeline.defs.tags import COMMIT_TAG, commit_tree
from inferx_pipeline.errors import InferxError, RegistryError
from inferx_pipeline.gitrepo import WatchedRepo
from inferx_pipeline.golden import load_golden
from inferx_pipeline.images.refs import ImageRef
from inferx_pipeline.images.registry import Registries
from inferx_pipeline.matrix.changes import affected_recipes
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.partitions import Cell, follows_new, partitioned, pinned_cells
from inferx_pipeline.plan.build import MatrixRequest, load_matrix
from inferx_pipeline.recipes.loader import load_recipes
from inferx_pipeline.settings import Settings

Ladders = Mapping[str, Sequence[int]]
Jobs = Sequence["dg.UnresolvedAssetJobDefinition"]  # a type only: not exported at run time


def _result(
    context: dg.SensorEvaluationContext,
    cells: Iterable[Cell],
    ladder_of: Ladders,
    *,
    reason: str,
    key_prefix: str,
    tags: Mapping[str, str],
) -> tuple[list[dg.RunRequest], list[Cell]]:
    """Requests for ``cells`` that partitions hold, and those cells; the rest is logged."""
    held, outside = partitioned(cells, ladder_of)
    for cell in outside:
        context.log.warning(
            f"{cell.sku} c{cell.conc} is not a partition of the loaded definitions; "
            "reload the code location to measure it"
        )
    requests = cell_requests(held, ladder_of, reason=reason, key_prefix=key_prefix, tags=tags)
    return requests, held


def image_sensor(ladder_of: Ladders, jobs: Jobs) -> dg.SensorDefinition:
    """The new-image-tag sensor over the SKUs of ``ladder_of``."""

    @dg.sensor(
        name="new_image_tags",
        jobs=list(jobs),
        minimum_interval_seconds=300,
        description="Measures new tags of the engine images that recipes track.",
    )
    def new_image_tags(
        context: dg.SensorEvaluationContext,
        project: ProjectResource,
        registries: dg.ResourceParam[Registries],
    ) -> dg.SensorResult | dg.SkipReason:
        settings = project.settings()
        tracking = [
            job
            for job in load_matrix(MatrixRequest(paths=()), settings).jobs
            if job.image_track is not None and job.sku in ladder_of
        ]
        if not tracking:
            return dg.SkipReason("no recipe tracks its image (engine.track)")
        seen: dict[str, list[str]] = json.loads(context.cursor) if context.cursor else {}
        now = dict(seen)
        requests: list[dg.RunRequest] = []
        cells_held: list[Cell] = []
        for repository, users in _by_repository(tracking).items():
            pinned = ImageRef.parse(users[0].engine.image)
            client = registries.client_for(pinned)
            try:
                tags = client.tags(pinned.repository)
            except RegistryError as err:
                context.log.warning(f"{repository}: {err}; will retry next tick")
                continue
            now[repository] = sorted(tags)
            if repository not in seen:
                continue  # first sight of this repository: record its tags, run nothing
            for tag in sorted(set(tags) - set(seen[repository])):
                image = pinned.with_tag(tag)
                followers = [job for job in users if follows_new(job, image)]
                if not followers:
                    continue
                digest = client.digest(pinned.repository, tag)
                cells = {Cell(sku=job.sku, conc=job.conc, image=image) for job in followers}
                found, held = _result(
                    context,
                    cells,
                    ladder_of,
                    reason="new-image-tag",
                    key_prefix=f"image:{image}@{digest}",
                    tags={"inferx/image": image, "inferx/digest": digest},
                )
                requests += found
                cells_held += held
        cursor = json.dumps(now, sort_keys=True)
        return dg.SensorResult(
            run_requests=requests,
            cursor=cursor,
            dynamic_partitions_requests=add_requests(context.instance, cells_held),
        )

    return new_image_tags


def _by_repository(jobs: Iterable[BenchmarkJob]) -> dict[str, list[BenchmarkJob]]:
    found: dict[str, list[BenchmarkJob]] = {}
    for job in jobs:
        found.setdefault(ImageRef.parse(job.engine.image).repository_id, []).append(job)
    return found


def curve_sensor(ladder_of: Ladders, jobs: Jobs) -> dg.SensorDefinition:
    """The changed-golden-curve sensor over the SKUs of ``ladder_of``."""

    @dg.sensor(
        name="golden_curve_changes",
        jobs=list(jobs),
        minimum_interval_seconds=60,
        description="Reruns the recipes whose golden acceptance-length curve file changed.",
    )
    def golden_curve_changes(
        context: dg.SensorEvaluationContext, project: ProjectResource
    ) -> dg.SensorResult | dg.SkipReason:
        settings = project.settings()
        golden = load_golden(settings.golden_dir)
        hashes = {name: golden.file_hash(name) for name in golden.names()}
        cursor = json.dumps(hashes, sort_keys=True)
        if not context.cursor:
            return dg.SensorResult(cursor=cursor, skip_reason="recorded the curves' hashes")
        before: dict[str, str] = json.loads(context.cursor)
        changed = sorted(name for name, sha in hashes.items() if before.get(name) != sha)
        if not changed:
            return dg.SkipReason("no golden curve changed")
        matrix = load_matrix(MatrixRequest(paths=()), settings)
        files = [settings.golden_dir / f"{name}.yaml" for name in changed]
        recipes = affected_recipes(files, matrix.recipes.recipes, settings.golden_dir)
        requests, held = _result(
            context,
            pinned_cells(job for job in matrix.jobs if job.recipe_id in recipes),
            ladder_of,
            reason="golden-curve-changed",
            key_prefix="curves:" + ",".join(f"{n}@{hashes[n][:12]}" for n in changed),
            tags={"inferx/curves": ",".join(changed)},
        )
        return dg.SensorResult(
            run_requests=requests,
            cursor=cursor,
            dynamic_partitions_requests=add_requests(context.instance, held),
        )

    return golden_curve_changes


def _commit_cells(repo: WatchedRepo, sha: str, settings: Settings) -> list[Cell]:
    """The pinned cells of the recipes commit ``sha`` affects, read as of that commit.

    Which recipes a file affects needs every recipe's ``extends`` chain (parsed, not
    policy-checked); only the affected ones are then validated and expanded.
    """
    tree = repo.export_tree(sha, commit_tree(settings.state, sha))
    at_commit = Settings(root=tree, state_dir=settings.state)
    parsed = load_recipes(
        (at_commit.recipes_dir,),
        catalog=cached_catalog(at_commit.catalog_dir),
        golden=load_golden(at_commit.golden_dir),
        run_policy=False,
    )
    changed = [tree / path for path in repo.changed_files(sha)]
    recipes = affected_recipes(changed, parsed.recipes, at_commit.golden_dir)
    paths = tuple(item.source for item in parsed.recipes if item.recipe.id in recipes)
    if not paths:
        return []
    jobs = load_matrix(MatrixRequest(paths=paths), at_commit).jobs
    return sorted(pinned_cells(jobs), key=str)


def git_sensor(ladder_of: Ladders, jobs: Jobs) -> dg.SensorDefinition:
    """The merged-recipe-change sensor over the SKUs of ``ladder_of``."""

    @dg.sensor(
        name="merged_recipe_changes",
        jobs=list(jobs),
        minimum_interval_seconds=120,
        description="Reruns the recipes changed by each new commit on the watched branch.",
    )
    def merged_recipe_changes(
        context: dg.SensorEvaluationContext,
        project: ProjectResource,
        recipes_repo: RecipeRepoResource,
    ) -> dg.SensorResult | dg.SkipReason:
        settings = project.settings()
        watched = recipes_repo.watched(settings.state)
        if watched is None:
            return dg.SkipReason("no recipe repository to watch (set INFERX_RECIPES_REPO)")
        head = watched.fetch()
        if not context.cursor:
            return dg.SensorResult(cursor=head, skip_reason=f"watching from {head[:12]}")
        commits = watched.commits_since(context.cursor)
        if not commits:
            return dg.SkipReason(f"no new commit after {context.cursor[:12]}")
        requests: list[dg.RunRequest] = []
        cells_held: list[Cell] = []
        for sha in commits:
            try:
                cells = _commit_cells(watched, sha, settings)
            except InferxError as err:  # a broken commit: say so, go on with the next
                context.log.warning(f"commit {sha[:12]}: cannot expand its recipes: {err}")
                continue
            found, held = _result(
                context,
                cells,
                ladder_of,
                reason="recipe-merged",
                key_prefix=f"commit:{sha}",
                tags={COMMIT_TAG: sha},
            )
            requests += found
            cells_held += held
        return dg.SensorResult(
            run_requests=requests,
            cursor=head,
            dynamic_partitions_requests=add_requests(context.instance, cells_held),
        )

    return merged_recipe_changes
