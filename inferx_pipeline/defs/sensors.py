"""Sensors for what changed: new image tags, golden curves, merged recipe changes.

Each keeps a cursor, requests exactly the affected partitions (one run per SKU x image
x range of concurrencies, see ``defs/requests.py``), registers the images it requests
as partitions of the SKUs that run them, and says why in the run tags. The first tick of
each (no cursor, or an empty one, as the UI's tick preview sends) records where things
stand and requests nothing; a tick with no change requests nothing.

A tick that requests nothing says why in its skip reason, which the UI's tick history and
"Preview tick result" show: what failed (the registry or repository, its error, the
setting that points at it) or that nothing is new. Dagster refuses a skip reason beside
run requests, so a tick that requests runs while part of it failed (one registry of
several unreachable) writes the failure to the tick's log as a warning; its cursor keeps
the failed part where it was, so the next tick tries it again.

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
from dataclasses import dataclass, field

import dagster as dg

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.defs.partitions import add_requests
from inferx_pipeline.defs.requests import cell_requests
from inferx_pipeline.defs.resources import ProjectResource, RecipeRepoResource
from inferx_pipeline.defs.tags import COMMIT_TAG
from inferx_pipeline.errors import GitRepoError, InferxError, RegistryError
from inferx_pipeline.gitrepo import WatchedRepo, commit_tree, redact_url
from inferx_pipeline.golden import load_golden
from inferx_pipeline.images.refs import ImageRef
from inferx_pipeline.images.registry import Registries, RegistryClient
from inferx_pipeline.matrix.changes import affected_recipes
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.partitions import Cell, follows_new, partitioned, pinned_cells
from inferx_pipeline.plan.build import MatrixRequest, load_matrix
from inferx_pipeline.recipes.loader import load_recipes
from inferx_pipeline.recipes.policy.data import cached_policy
from inferx_pipeline.settings import Settings

Ladders = Mapping[str, Sequence[int]]
Jobs = Sequence["dg.UnresolvedAssetJobDefinition"]  # a type only: not exported at run time


@dataclass
class _Tick:
    """What one tick found: its requests and the cells they cover, and why it has no more.

    ``failures`` are what broke (a registry, a commit); ``idle`` what was simply not new.
    """

    requests: list[dg.RunRequest] = field(default_factory=list)
    held: list[Cell] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    idle: list[str] = field(default_factory=list)

    def request(
        self,
        cells: Iterable[Cell],
        ladder_of: Ladders,
        *,
        reason: str,
        key_prefix: str,
        tags: Mapping[str, str],
    ) -> None:
        """Request the ``cells`` that partitions hold; the rest is a failure to report."""
        held, outside = partitioned(cells, ladder_of)
        if outside:
            names = ", ".join(sorted(f"{cell.sku} c{cell.conc}" for cell in outside))
            self.failures.append(
                f"{names}: not partitions of the loaded definitions; reload the code location "
                "to measure them"
            )
        self.requests += cell_requests(
            held, ladder_of, reason=reason, key_prefix=key_prefix, tags=tags
        )
        self.held += held

    def result(
        self, context: dg.SensorEvaluationContext, cursor: str, *, nothing: str = ""
    ) -> dg.SensorResult:
        """The tick's result: its requests (failures logged), or why it requests nothing.

        ``nothing`` is the reason when nothing failed and no ``idle`` reason was noted.
        """
        if self.requests:
            for failure in self.failures:
                context.log.warning(failure)
            return dg.SensorResult(
                run_requests=self.requests,
                cursor=cursor,
                dynamic_partitions_requests=add_requests(context.instance, self.held),
            )
        reasons = [*self.failures, *self.idle] or [nothing or "nothing to request"]
        return dg.SensorResult(cursor=cursor, skip_reason="; ".join(reasons))


def _registry_setting(settings: Settings) -> str:
    """Where the registries' URLs come from, for a message about an unreachable one."""
    if settings.registries is None:
        return "registry config: INFERX_REGISTRIES, unset: default URLs (Docker Hub for docker.io)"
    return f"registry config: INFERX_REGISTRIES={settings.registries}"


def image_sensor(ladder_of: Ladders, jobs: Jobs) -> dg.SensorDefinition:
    """The new-image-tag sensor over the SKUs of ``ladder_of``."""

    @dg.sensor(
        name="new_image_tags",
        jobs=list(jobs),
        minimum_interval_seconds=300,
        description=(
            "Measures new tags of the engine images that recipes track (engine.track), read "
            "from the registries INFERX_REGISTRIES configures (default Docker Hub)."
        ),
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
            return dg.SkipReason(
                f"no recipe on {', '.join(ladder_of) or 'any SKU'} tracks its image "
                "(engine.track): nothing to follow"
            )
        seen: dict[str, list[str]] = json.loads(context.cursor) if context.cursor else {}
        now = dict(seen)
        tick = _Tick()
        for repository, users in _by_repository(tracking).items():
            pinned = ImageRef.parse(users[0].engine.image)
            client = registries.client_for(pinned)
            try:
                tags = client.tags(pinned.repository)
                new = sorted(set(tags) - set(seen.get(repository, tags)))
                if new:
                    _new_tags(tick, client, pinned, users, new, ladder_of)
                elif repository in seen:
                    tick.idle.append(
                        f"{repository}: no new tag since the cursor (tags seen: "
                        f"{len(seen[repository])})"
                    )
                else:
                    tick.idle.append(
                        f"{repository}: first look, recorded its tags ({len(tags)}); tags "
                        "pushed from now on are measured"
                    )
            except RegistryError as err:
                tick.failures.append(
                    f"{repository}: registry unreachable or refusing: {err} "
                    f"({_registry_setting(settings)}); tried again next tick"
                )
                continue
            now[repository] = sorted(tags)
        return tick.result(context, json.dumps(now, sort_keys=True))

    return new_image_tags


def _new_tags(
    tick: _Tick,
    client: RegistryClient,
    pinned: ImageRef,
    users: Sequence[BenchmarkJob],
    new: Sequence[str],
    ladder_of: Ladders,
) -> None:
    """Request the partitions of each tag in ``new`` that a recipe of ``users`` follows."""
    unfollowed: list[str] = []
    for tag in new:
        image = pinned.with_tag(tag)
        followers = [job for job in users if follows_new(job, image)]
        if not followers:
            unfollowed.append(tag)
            continue
        digest = client.digest(pinned.repository, tag)
        tick.request(
            {Cell(sku=job.sku, conc=job.conc, image=image) for job in followers},
            ladder_of,
            reason="new-image-tag",
            key_prefix=f"image:{image}@{digest}",
            tags={"inferx/image": image, "inferx/digest": digest},
        )
    if unfollowed:
        tick.idle.append(
            f"{pinned.repository_id}: new tags {', '.join(unfollowed)} match no recipe's "
            "engine.track"
        )


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
        try:
            golden = load_golden(settings.golden_dir)
        except InferxError as err:
            return dg.SkipReason(f"cannot read the golden curves: {err}")
        hashes = {name: golden.file_hash(name) for name in golden.names()}
        cursor = json.dumps(hashes, sort_keys=True)
        if not context.cursor:
            return dg.SensorResult(
                cursor=cursor,
                skip_reason=f"first look: recorded the hash of each curve in {settings.golden_dir} "
                f"({len(hashes)}); a change from now on reruns the recipes that use it",
            )
        before: dict[str, str] = json.loads(context.cursor)
        changed = sorted(name for name, sha in hashes.items() if before.get(name) != sha)
        if not changed:
            return dg.SkipReason("no golden curve changed")
        matrix = load_matrix(MatrixRequest(paths=()), settings)
        files = [settings.golden_dir / f"{name}.yaml" for name in changed]
        recipes = affected_recipes(files, matrix.recipes.recipes, settings.golden_dir)
        tick = _Tick()
        tick.request(
            pinned_cells(job for job in matrix.jobs if job.recipe_id in recipes),
            ladder_of,
            reason="golden-curve-changed",
            key_prefix="curves:" + ",".join(f"{n}@{hashes[n][:12]}" for n in changed),
            tags={"inferx/curves": ",".join(changed)},
        )
        return tick.result(
            context, cursor, nothing=f"changed curves {', '.join(changed)}: no recipe uses them"
        )

    return golden_curve_changes


def _commit_cells(repo: WatchedRepo, sha: str, settings: Settings) -> list[Cell]:
    """The pinned cells of the recipes commit ``sha`` affects, read as of that commit.

    Which recipes a file affects needs every recipe's ``extends`` chain (parsed, not
    policy-checked); only the affected ones are then validated and expanded.
    """
    tree = repo.export_tree(sha, commit_tree(settings.state, sha))
    # The running settings at the commit's tree (its recipe checks included), same state.
    at_commit = settings.model_copy(update={"root": tree, "state_dir": settings.state})
    parsed = load_recipes(
        (at_commit.recipes_dir,),
        catalog=cached_catalog(at_commit.catalog_dir),
        golden=load_golden(at_commit.golden_dir),
        policy=cached_policy(at_commit.catalog_dir),
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
        description=(
            "Reruns the recipes changed by each new commit on the watched branch "
            "(INFERX_RECIPES_REPO, INFERX_RECIPES_BRANCH)."
        ),
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
        try:
            head = watched.fetch()
        except GitRepoError as err:
            return dg.SkipReason(
                f"cannot fetch branch {watched.branch} of {redact_url(watched.source)}: {err} "
                "(set by INFERX_RECIPES_REPO and INFERX_RECIPES_BRANCH); tried again next tick"
            )
        if not context.cursor:
            return dg.SensorResult(
                cursor=head,
                skip_reason=f"first look: watching {watched.branch} from {head[:12]}; each "
                "commit from now on reruns the recipes it changes",
            )
        commits = watched.commits_since(context.cursor)
        if not commits:
            return dg.SkipReason(f"no new commit after {context.cursor[:12]}")
        tick = _Tick()
        for sha in commits:
            try:
                cells = _commit_cells(watched, sha, settings)
            except InferxError as err:  # a broken commit: say so, go on with the next
                tick.failures.append(f"commit {sha[:12]}: cannot expand its recipes: {err}")
                continue
            tick.request(
                cells,
                ladder_of,
                reason="recipe-merged",
                key_prefix=f"commit:{sha}",
                tags={COMMIT_TAG: sha},
            )
        return tick.result(
            context,
            head,
            nothing=f"no new commit up to {head[:12]} changes a recipe, a fragment or a curve "
            f"a recipe uses (commits checked: {len(commits)})",
        )

    return merged_recipe_changes
