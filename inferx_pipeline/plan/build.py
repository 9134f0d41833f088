"""The matrix a person asks for: load recipes, expand, resolve selection inputs, select.

``MatrixRequest`` is what ``inferx matrix`` parses its flags into; ``build_matrix`` is the
one library call behind the command (and the Dagster ``sweep_matrix`` asset).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import Field

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.conformance.served import judge_served
from inferx_pipeline.golden import load_golden
from inferx_pipeline.matrix import changes
from inferx_pipeline.matrix.eval_catalog import cached_eval_catalog
from inferx_pipeline.matrix.evals import EvalMode, load_eval_policies, runnable
from inferx_pipeline.matrix.expand import duplicates_of, expand
from inferx_pipeline.matrix.inferencex_rows import inferencex_rows
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.runners import cached_runners
from inferx_pipeline.matrix.select import Selection, select
from inferx_pipeline.plan.crosscheck import duplicate_findings
from inferx_pipeline.recipes.loader import LoadedRecipe, LoadResult, load_recipes
from inferx_pipeline.recipes.policy.data import cached_policy
from inferx_pipeline.settings import Settings
from inferx_pipeline.strict import FrozenModel


class MatrixRequest(FrozenModel):
    """Which recipes to expand and which of their jobs to keep."""

    paths: tuple[Path, ...] = Field(description="Recipe files/directories; () = recipes/.")
    selection: Selection = Field(default_factory=Selection, description="Job filters.")
    changed: tuple[str, str] | None = Field(
        default=None, description="(base, head) git revisions: keep recipes changed between."
    )
    repo: Path | None = Field(default=None, description="Git checkout for changed; None = root.")
    new_vs: Path | None = Field(
        default=None, description="Previous job list JSON: keep jobs with new fingerprints."
    )
    changelog: Path | None = Field(default=None, description="InferenceX perf-changelog.yaml.")
    changelog_last: int = Field(default=1, ge=1, description="Changelog entries to use.")
    evals: EvalMode = Field(
        default="none",
        description="Eval jobs by the eval policy: none, default, evals-only or all "
        "(the last two run eval jobs only).",
    )
    policy: bool = Field(default=True, description="Run the pre-GPU policy rules on load.")
    allow_duplicates: bool = Field(
        default=False, description="Keep identical jobs (InferenceX parity) instead of failing."
    )


def build_matrix(request: MatrixRequest, settings: Settings) -> list[BenchmarkJob]:
    """Jobs of ``request`` a sweep runs; RecipeError (exit 2) listing every invalid recipe."""
    return checked_matrix(request, settings).jobs


def checked_matrix(request: MatrixRequest, settings: Settings) -> LoadedMatrix:
    """``load_matrix``, but RecipeError (exit 2) listing every invalid recipe."""
    loaded = load_matrix(request, settings)
    loaded.recipes.raise_for_errors()
    return loaded


@dataclass(frozen=True)
class LoadedMatrix:
    """Every recipe as loaded (errors included) and the selected jobs of the valid ones."""

    recipes: LoadResult
    selected: list[BenchmarkJob]
    evals: EvalMode
    eval_only: bool

    @cached_property
    def jobs(self) -> list[BenchmarkJob]:
        """The jobs a sweep runs: the selected ones, or only their eval jobs (eval-only)."""
        return runnable(self.selected, self.eval_only)

    def inferencex_rows(self) -> list[dict[str, Any]]:
        """The selected jobs as InferenceX's generator rows (eval fields for ``evals``)."""
        return inferencex_rows(self.selected, evals=self.evals, eval_only=self.eval_only)


def load_matrix(request: MatrixRequest, settings: Settings) -> LoadedMatrix:
    """Like ``build_matrix``, but invalid recipes are listed in ``recipes.errors``, not raised.

    For long-lived callers (the Dagster definitions) that must keep serving the valid
    recipes while one file is broken. A recipe repeating another's job (same fingerprint
    and concurrency) is such a file: a ``duplicate-jobs`` error, and none of its jobs.
    """
    catalog = cached_catalog(settings.catalog_dir)
    golden = load_golden(settings.golden_dir)
    if settings.recipe_checks == "parity":  # InferenceX's rules: no pre-GPU policy, twins kept
        request = request.model_copy(update={"policy": False, "allow_duplicates": True})
    loaded = load_recipes(
        request.paths or (settings.recipes_dir,),
        catalog=catalog,
        golden=golden,
        policy=cached_policy(settings.catalog_dir),  # the root's rules, not the environment's
        run_policy=request.policy,
    )
    if request.policy:
        # The rules on every job's final server command, as inferx validate runs them.
        judge_served(
            loaded,
            golden=golden,
            catalog=catalog,
            data=cached_policy(settings.catalog_dir),
            runners=cached_runners(settings.catalog_dir),
            evals=cached_eval_catalog(settings.catalog_dir),
        )
    policies = load_eval_policies(settings.catalog_dir) if request.evals != "none" else None
    jobs = expand(
        loaded.recipes,
        golden=golden,
        catalog=catalog,
        evals=request.evals,
        runners=cached_runners(settings.catalog_dir),
        eval_policies=policies,
        eval_catalog=cached_eval_catalog(settings.catalog_dir) if policies is not None else None,
        duplicates="keep",
    )
    if not request.allow_duplicates:
        jobs = _without_repeats(jobs, loaded)
    selected = select(jobs, _resolved(request, loaded.recipes, settings))
    eval_only = policies is not None and policies.eval_only(request.evals)
    return LoadedMatrix(loaded, selected, request.evals, eval_only)


def matrix_inputs(request: MatrixRequest, settings: Settings, matrix: LoadedMatrix) -> list[Path]:
    """Every file and folder ``load_matrix`` read for ``request``: what a cached answer
    must re-digest (``plan.cache``). Not for ``changed``, which reads git history."""
    named = request.paths or (settings.recipes_dir,)
    # A file named alone takes its fragments' tree from the nearest ``_fragments`` above
    # it: one appearing there changes which fragments may resolve.
    trees = [
        parent / "_fragments"
        for path in named
        if not path.is_dir()
        for parent in path.absolute().parents
    ]
    chains = [file for loaded in matrix.recipes.parsed for file in loaded.chain]
    files = [path for path in (request.new_vs, request.changelog) if path is not None]
    data = [settings.recipes_dir, settings.catalog_dir, settings.golden_dir]
    return list(dict.fromkeys([*named, *trees, *chains, *files, *data]))


def _without_repeats(jobs: list[BenchmarkJob], loaded: LoadResult) -> list[BenchmarkJob]:
    """``jobs`` less those of each recipe repeating an earlier job, whose error (as ``inferx
    validate`` words it, both recipes named) joins ``loaded.errors``."""
    by_path = {str(recipe.source): recipe for recipe in loaded.parsed}
    found = duplicate_findings(jobs, by_path)
    if not found:
        return jobs
    loaded.errors.extend(found)
    repeating = {repeat.recipe_path for _, repeat in duplicates_of(jobs)}
    return [job for job in jobs if job.recipe_path not in repeating]


def _resolved(request: MatrixRequest, loaded: list[LoadedRecipe], settings: Settings) -> Selection:
    ids: frozenset[str] | None = None
    if request.changed is not None:
        files = changes.changed_files(request.repo or settings.root, *request.changed)
        ids = changes.affected_recipes(files, loaded, settings.golden_dir)
    if request.changelog is not None:
        globs = changes.changelog_globs(request.changelog, last=request.changelog_last)
        by_log = changes.matching_ids((r.recipe.id for r in loaded), globs)
        ids = by_log if ids is None else ids & by_log
    known = changes.known_fingerprints(request.new_vs) if request.new_vs is not None else None
    update: dict[str, object] = {}
    if ids is not None:
        update["recipe_ids"] = ids
    if known is not None:
        update["known_fingerprints"] = known
    return request.selection.model_copy(update=update)
