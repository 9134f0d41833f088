"""The jobs a pull request's diff changes, read from its head tree.

Two layouts of the head tree:

- ``recipes`` (this project's: ``recipes/``, ``golden_al_distribution/``, ``catalog/``): a
  changed recipe file, a changed ``extends`` fragment or a changed golden curve makes the
  recipes that use it affected (``matrix.changes.affected_recipes``, as the merged-recipe
  sensor does), each with the changed files that made it so; recipes whose id matches an
  entry added to ``perf-changelog.yaml`` too, when the changelog's two versions are given.
  Those recipes are validated and expanded by ``plan.build`` (RecipeError for an invalid
  one, a changed recipe that does not load included).
- ``inferencex`` (InferenceX's: ``perf-changelog.yaml`` and ``configs/*-master.yaml``, no
  ``recipes/``): as InferenceX's own PR sweep, only the entries added to the append-only
  changelog count (``prs.changelog``); the master-config entries their config-key globs
  match are imported as recipes in memory (``matrix.inferencex``), limited to the
  entry's ``scenario-type`` when it names one, and expanded with this project's catalog.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.errors import PullRequestError, RecipeSchemaError
from inferx_pipeline.golden import GoldenRegistry, load_golden
from inferx_pipeline.images.changelog import ChangelogEntry
from inferx_pipeline.matrix.changes import affected_recipes, matching_ids
from inferx_pipeline.matrix.eval_catalog import cached_eval_catalog
from inferx_pipeline.matrix.evals import EvalMode, load_eval_policies
from inferx_pipeline.matrix.expand import expand
from inferx_pipeline.matrix.import_defaults import ImportDefaults, cached_import_defaults
from inferx_pipeline.matrix.inferencex import entry_to_recipe, read_master
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.runners import RunnerCatalog, cached_runners
from inferx_pipeline.plan.build import MatrixRequest, checked_matrix
from inferx_pipeline.prs.changelog import CHANGELOG_FILE, added_entries
from inferx_pipeline.recipes.loader import LoadResult, is_fragment, load_recipes
from inferx_pipeline.recipes.policy.data import cached_policy
from inferx_pipeline.recipes.scenarios import ScenarioKind
from inferx_pipeline.recipes.schema import Recipe
from inferx_pipeline.settings import Settings
from inferx_pipeline.strict import FrozenModel

Layout = Literal["recipes", "inferencex"]
MASTERS_GLOB = "configs/*-master.yaml"


class AffectedRecipe(FrozenModel):
    """A recipe (or InferenceX config key) the diff changes, and what made it so."""

    recipe_id: str
    path: Path | None = Field(
        description="The recipe file in the head tree; None for an InferenceX config key."
    )
    sources: tuple[str, ...] = Field(
        description="Changed paths (repository-relative) that make the recipe affected."
    )


class PrScope(FrozenModel):
    """What a PR's diff changes: the recipes, the changelog's added config keys, the jobs."""

    layout: Layout
    recipes: tuple[AffectedRecipe, ...] = Field(description="Affected recipes, sorted by id.")
    config_keys: tuple[str, ...] = Field(
        description="Config-key globs of the changelog entries the PR adds, in file order."
    )
    jobs: tuple[BenchmarkJob, ...] = Field(
        description="The affected recipes' jobs in matrix order, eval jobs included."
    )

    @property
    def recipe_ids(self) -> tuple[str, ...]:
        """The affected recipes' ids, sorted."""
        return tuple(item.recipe_id for item in self.recipes)

    @property
    def recipe_files(self) -> tuple[Path, ...]:
        """The affected recipes' files in the head tree (none for an InferenceX tree)."""
        return tuple(item.path for item in self.recipes if item.path is not None)


def tree_layout(tree: Path) -> Layout:
    """``inferencex`` for a tree with the changelog and master configs but no ``recipes/``."""
    inferencex = (tree / CHANGELOG_FILE).is_file() and any(tree.glob(MASTERS_GLOB))
    return "inferencex" if inferencex and not (tree / "recipes").is_dir() else "recipes"


def pr_scope(
    tree: Path,
    changed: Sequence[str],
    *,
    changelog_base: str | bytes | None = None,
    changelog_head: str | bytes | None = None,
    catalog_dir: Path | None = None,
    evals: EvalMode = "default",
) -> PrScope:
    """The recipes and jobs that the PR whose head is checked out at ``tree`` changes.

    ``changed`` are the PR's changed paths, relative to the repository root (deleted
    ones included: they affect nothing in the head tree). ``changelog_base`` and
    ``changelog_head`` are ``perf-changelog.yaml`` on the base branch and at the head
    (text, or UTF-8 bytes; None: absent there; both None: not given, which an
    InferenceX tree whose changelog changed needs). ``catalog_dir`` is the catalog an
    InferenceX tree (which has none) is expanded with, this project's; a recipes tree
    always uses its own ``catalog/``. ``evals`` is the matrix's eval mode
    (``PrRun.matrix_evals``).

    Raises PullRequestError for a changelog edited other than by adding entries, an
    added config key that matches no master config, or a missing changelog or catalog;
    RecipeError for an affected recipe (or an InferenceX config) that is invalid.
    Reads files only.
    """
    changelog = _versions(changelog_base, changelog_head)
    if tree_layout(tree) == "inferencex":
        return _inferencex_scope(tree, changed, changelog, catalog_dir, evals)
    return _recipes_scope(tree, changed, changelog, evals)


def _recipes_scope(
    tree: Path, changed: Sequence[str], changelog: tuple[str, str] | None, evals: EvalMode
) -> PrScope:
    # The tree's own catalog, golden curves and recipes: the PR may change any of them.
    at_tree = Settings(root=tree, state_dir=tree / ".inferx")
    parsed = load_recipes(
        (at_tree.recipes_dir,),
        catalog=cached_catalog(at_tree.catalog_dir),
        golden=load_golden(at_tree.golden_dir),
        policy=cached_policy(at_tree.catalog_dir),
        run_policy=False,
    )
    sources: dict[str, list[str]] = defaultdict(list)
    for path in changed:
        for recipe_id in affected_recipes([tree / path], parsed.recipes, at_tree.golden_dir):
            sources[recipe_id].append(path)
    keys = _changelog_keys(changelog)
    for recipe_id in matching_ids((item.recipe.id for item in parsed.recipes), keys):
        sources[recipe_id].append(CHANGELOG_FILE)
    paths = [item.source for item in parsed.recipes if item.recipe.id in sources]
    paths += _broken(parsed, tree, changed)
    if not paths:
        return PrScope(layout="recipes", recipes=(), config_keys=keys, jobs=())
    jobs = checked_matrix(MatrixRequest(paths=tuple(paths), evals=evals), at_tree).selected
    files = {item.recipe.id: item.source for item in parsed.recipes}
    recipes = _affected(sources, files)
    return PrScope(layout="recipes", recipes=recipes, config_keys=keys, jobs=tuple(jobs))


def _broken(parsed: LoadResult, tree: Path, changed: Sequence[str]) -> list[Path]:
    """Recipe files that do not load and that a changed file touches (to raise their error)."""
    touched = {(tree / path).resolve() for path in changed}
    recipes_dir = (tree / "recipes").resolve()
    found: list[Path] = []
    for finding in parsed.errors:
        recipe = finding.recipe
        if recipe is None or is_fragment(recipe.resolve(), recipes_dir) or recipe in found:
            continue
        files = {recipe, *finding.chain}
        if finding.location is not None:
            files.add(finding.location.file)
        if {f.resolve() for f in files} & touched:
            found.append(recipe)
    return found


def _inferencex_scope(
    tree: Path,
    changed: Sequence[str],
    changelog: tuple[str, str] | None,
    catalog_dir: Path | None,
    evals: EvalMode,
) -> PrScope:
    if changelog is None:
        if CHANGELOG_FILE in changed:
            raise PullRequestError(
                f"{tree}: {CHANGELOG_FILE} changed but its base and head versions were not "
                "given; pass changelog_base and changelog_head"
            )
        # InferenceX sweeps a PR only when its changelog changes (run-sweep.yml paths).
        return PrScope(layout="inferencex", recipes=(), config_keys=(), jobs=())
    if catalog_dir is None:
        raise PullRequestError(
            f"{tree}: an InferenceX tree has no catalog/; pass catalog_dir (this project's "
            "catalog) to expand its configs"
        )
    entries = added_entries(*changelog)
    masters = _masters(tree)
    scenarios = _scenarios_by_key(entries, masters)
    runners = cached_runners(catalog_dir)
    defaults = cached_import_defaults(catalog_dir)
    recipes = [
        _imported(key, entry, master, runners, defaults)
        for key, (master, entry) in masters.items()
        if key in scenarios
    ]
    jobs = expand(
        recipes,
        # Imported recipes carry real acceptance only: no golden curve is read.
        golden=GoldenRegistry({}, {}, Path()),
        catalog=cached_catalog(catalog_dir),
        evals=evals,
        runners=runners,
        eval_policies=load_eval_policies(catalog_dir) if evals != "none" else None,
        eval_catalog=cached_eval_catalog(catalog_dir) if evals != "none" else None,
        duplicates="keep",  # InferenceX runs identical rows of two configs both
    )
    kept = tuple(job for job in jobs if job.scenario in scenarios[job.recipe_id])
    affected = {key: [CHANGELOG_FILE] for key in scenarios}
    return PrScope(
        layout="inferencex",
        recipes=_affected(affected, {}),
        config_keys=_globs(entries),
        jobs=kept,
    )


def _imported(
    key: str, entry: dict[str, Any], master: str, runners: RunnerCatalog, defaults: ImportDefaults
) -> Recipe:
    """Master-config entry ``key`` as a recipe, as ``inferx import-inferencex`` writes it."""
    try:
        return Recipe.model_validate(entry_to_recipe(key, entry, runners, defaults, master))
    except (ValidationError, RecipeSchemaError) as err:
        raise RecipeSchemaError(f"{master}: {key}: not a valid recipe: {err}") from err


def _masters(tree: Path) -> dict[str, tuple[str, dict[str, Any]]]:
    """Config key -> (master file name, entry) over every master config of ``tree``."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for path in sorted(tree.glob(MASTERS_GLOB)):
        for key, entry in read_master(path).items():
            found[key] = (path.name, entry)
    return found


def _scenarios_by_key(
    entries: Sequence[ChangelogEntry], masters: dict[str, Any]
) -> dict[str, set[ScenarioKind]]:
    """Matched config key -> the scenarios its added entries name (none named: all)."""
    every: tuple[ScenarioKind, ...] = ("fixed-seq-len", "agentic-coding")
    out: dict[str, set[ScenarioKind]] = defaultdict(set)
    for entry in entries:
        for glob in entry.config_keys:
            keys = matching_ids(masters, (glob,))
            if not keys:
                raise PullRequestError(
                    f"{CHANGELOG_FILE}: added entry ({entry.pr_link}): config key {glob!r} "
                    f"matches no entry of {MASTERS_GLOB}; fix the key or add the config"
                )
            named = [s for s in every if s in entry.scenario_type] or list(every)
            for key in keys:
                out[key].update(named)
    return out


def _versions(base: str | bytes | None, head: str | bytes | None) -> tuple[str, str] | None:
    """(base, head) texts of the changelog, '' where absent; None when neither is given."""
    if base is None and head is None:
        return None
    return _text(base, "base"), _text(head, "head")


def _text(content: str | bytes | None, version: str) -> str:
    if not isinstance(content, bytes):
        return content or ""
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError as err:
        raise PullRequestError(
            f"{CHANGELOG_FILE} ({version} version): not UTF-8 ({err}); save it as UTF-8"
        ) from err


def _changelog_keys(changelog: tuple[str, str] | None) -> tuple[str, ...]:
    if changelog is None:
        return ()
    return _globs(added_entries(*changelog))


def _globs(entries: Sequence[ChangelogEntry]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(glob for entry in entries for glob in entry.config_keys))


def _affected(sources: dict[str, list[str]], files: dict[str, Path]) -> tuple[AffectedRecipe, ...]:
    return tuple(
        AffectedRecipe(
            recipe_id=recipe_id, path=files.get(recipe_id), sources=tuple(dict.fromkeys(paths))
        )
        for recipe_id, paths in sorted(sources.items())
    )
