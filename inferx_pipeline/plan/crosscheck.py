"""What ``inferx validate`` checks beyond one recipe: labels, expansion, identical jobs.

The loader's rules look at one recipe at a time; these need the matrix or all recipes:

- ``runner-label`` (error): a recipe's InferenceX runner label is not in
  ``catalog/inferencex-runners.yaml`` (InferenceX's own runners file), so the job has
  no node facts to schedule or budget DRAM with;
- ``matrix`` (error): a recipe that passed the rules but does not expand;
- ``duplicate-jobs`` (error): two jobs with the same fingerprint and concurrency, which
  ``inferx matrix`` rejects, naming both;
- the final-command rules (``conformance/served.py``): every job's ServerSpec, eval twins
  included, judged by the same rule ids as the recipe fields.

For a recipe written by ``inferx import-inferencex`` (``imported-from`` set) each finding
also says that InferenceX accepts the entry: these are the "InferenceX accepts what our
checks reject" cases of an imported folder, next to the per-recipe rules' own
(``agentic-spec-decoding``, ``thinking-explicit``...).

Public API: ``cross_findings(parsed, passed, ...)`` and ``validate_recipes(paths, ...)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.conformance.served import judge_served
from inferx_pipeline.errors import InferxError
from inferx_pipeline.golden import GoldenRegistry
from inferx_pipeline.matrix.eval_catalog import EvalCatalog
from inferx_pipeline.matrix.expand import duplicates_of, expand
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.runners import RUNNERS_FILE, RunnerCatalog
from inferx_pipeline.recipes.findings import Finding
from inferx_pipeline.recipes.loader import LoadedRecipe, LoadResult, load_recipes
from inferx_pipeline.recipes.policy.data import PolicyData


def _finding(loaded: LoadedRecipe, rule: str, field: str, message: str) -> Finding:
    location = loaded.locate((field,))
    return Finding(
        severity="error",
        rule=rule,
        message=message,
        location=location,
        field=field,
        chain=loaded.chain_to(location),
        recipe=loaded.source,
    )


def _accepted(loaded: LoadedRecipe) -> str:
    origin = loaded.recipe.imported_from
    return f"; InferenceX accepts it ({origin.master})" if origin is not None else ""


def runner_findings(parsed: Iterable[LoadedRecipe], runners: RunnerCatalog) -> list[Finding]:
    """Rule ``runner-label``: each explicit runner label InferenceX's runners file lacks."""
    return [
        _finding(
            loaded,
            "runner-label",
            "runner",
            f"got {label!r}; expected a runner label of catalog/{RUNNERS_FILE} (InferenceX "
            f"runners.yaml): without it the job has no node facts; SKU "
            f"{loaded.recipe.sku!r} is assumed{_accepted(loaded)}",
        )
        for loaded in parsed
        if (label := loaded.recipe.runner) is not None and runners.runner(label) is None
    ]


def _jobs(
    parsed: Sequence[LoadedRecipe],
    passed: frozenset[Path],
    ctx: tuple[GoldenRegistry, Catalog, RunnerCatalog],
) -> tuple[list[BenchmarkJob], list[Finding]]:
    golden, catalog, runners = ctx
    jobs: list[BenchmarkJob] = []
    found: list[Finding] = []
    for loaded in parsed:
        try:
            jobs.extend(
                expand([loaded], golden=golden, catalog=catalog, runners=runners, duplicates="keep")
            )
        except InferxError as err:
            # A recipe that failed a rule usually fails expansion for the same reason:
            # report only the expansion errors of recipes the rules let through.
            if loaded.source in passed:
                found.append(_finding(loaded, "matrix", "scenarios", str(err)))
    return jobs, found


def duplicate_findings(
    jobs: Sequence[BenchmarkJob], by_path: dict[str, LoadedRecipe]
) -> list[Finding]:
    """Rule ``duplicate-jobs``: one error per job repeating an earlier job (both named)."""
    found: list[Finding] = []
    for first, repeat in duplicates_of(jobs):
        loaded = by_path[repeat.recipe_path]
        found.append(
            _finding(
                loaded,
                "duplicate-jobs",
                "scenarios",
                f"job {repeat.job_id} is identical to job {first.job_id} (recipe "
                f"{first.recipe_id}, {first.recipe_path}): same fingerprint and concurrency; "
                f"remove one of the rows or make them differ{_accepted(loaded)}",
            )
        )
    return found


def cross_findings(
    parsed: Sequence[LoadedRecipe],
    passed: Iterable[LoadedRecipe],
    *,
    golden: GoldenRegistry,
    catalog: Catalog,
    runners: RunnerCatalog,
) -> list[Finding]:
    """Findings of ``runner-label``, ``matrix`` and ``duplicate-jobs`` over ``parsed``.

    ``parsed`` are all schema-valid recipes (policy errors or not), so identical jobs
    are found even between recipes that fail other rules; ``passed`` are those without
    errors. Never raises for a recipe's problem.
    """
    passed_paths = frozenset(loaded.source for loaded in passed)
    jobs, found = _jobs(parsed, passed_paths, (golden, catalog, runners))
    by_path = {str(loaded.source): loaded for loaded in parsed}
    return [*runner_findings(parsed, runners), *found, *duplicate_findings(jobs, by_path)]


def validate_recipes(
    paths: Iterable[Path],
    *,
    catalog: Catalog,
    golden: GoldenRegistry,
    policy: PolicyData,
    runners: RunnerCatalog,
    evals: EvalCatalog,
) -> LoadResult:
    """``load_recipes``, the final-command rules and ``cross_findings``: all ``inferx validate``
    reports.

    A recipe with a cross-recipe error leaves ``recipes`` like one with any other error.
    Raises RecipeSyntaxError only for a path that does not exist.
    """
    result = load_recipes(paths, catalog=catalog, golden=golden, policy=policy)
    judge_served(result, golden=golden, catalog=catalog, data=policy, runners=runners, evals=evals)
    errors = cross_findings(
        result.parsed, result.recipes, golden=golden, catalog=catalog, runners=runners
    )
    result.errors.extend(errors)
    failed = {finding.recipe for finding in errors}
    result.recipes = [loaded for loaded in result.recipes if loaded.source not in failed]
    return result
