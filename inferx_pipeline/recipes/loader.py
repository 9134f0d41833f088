"""Load recipes: find the files, merge ``extends:``, validate, run the policy rules.

Public API::

    load_recipes(paths, *, catalog, golden, policy=None, run_policy=True) -> LoadResult

``paths`` are recipe files or directories (searched recursively for ``*.yaml`` /
``*.yml``). Inside a directory, **fragments are never loaded as recipes**: a fragment is
a file whose name starts with ``_`` or that sits below a directory whose name starts
with ``_`` (``recipes/_fragments/vllm-rocm.yaml``); recipes pull them in with
``extends:``. A file named explicitly is always loaded as a recipe.

Every problem becomes a ``Finding`` (``file:line:col: field.path: message [rule]``); a
recipe with any error is left out of ``LoadResult.recipes`` while the others still load,
so a caller can list every error at once. ``LoadedRecipe`` keeps the source file, the
``extends`` chain (the recipe file, then every fragment it pulls in) and the location of
every node. ``policy`` defaults to the data under the default catalog directory;
``run_policy=False`` loads schema-valid recipes without the pre-GPU rules (an importer
that reports the rules' findings separately, with ``policy.check``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.errors import ExtendsError, RecipeError, RecipeSyntaxError
from inferx_pipeline.golden import GoldenRegistry
from inferx_pipeline.recipes import policy as policy_rules
from inferx_pipeline.recipes.diagnostics import findings_from_validation
from inferx_pipeline.recipes.extends import ExtendsResolver, Resolved, inside, real_path
from inferx_pipeline.recipes.findings import Finding, Location, raise_for_errors
from inferx_pipeline.recipes.policy.data import PolicyData, load_policy
from inferx_pipeline.recipes.schema import Recipe
from inferx_pipeline.recipes.yamlsource import FieldPath, SourceMap, plain
from inferx_pipeline.settings import Settings

RECIPE_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True, slots=True)
class LoadedRecipe:
    """A valid recipe and where it came from."""

    recipe: Recipe
    source: Path
    chain: tuple[Path, ...]
    locations: SourceMap
    via: dict[Path, tuple[Path, ...]]

    def locate(self, path: FieldPath, *, key: bool = False) -> Location | None:
        """Location of the value at field ``path`` (nearest located ancestor otherwise)."""
        return self.locations.locate(path, key=key)

    def chain_to(self, location: Location | None) -> tuple[Path, ...]:
        """The ``extends`` path from this recipe to the file of ``location``."""
        if location is None:
            return (self.source,)
        return self.via.get(location.file, (self.source,))


@dataclass(slots=True)
class LoadResult:
    """Every recipe that loaded, and every error and warning found on the way.

    ``recipes`` passed everything; ``parsed`` holds every schema-valid recipe with a
    unique id, policy errors or not, in discovery order (for checks across recipes that
    must see all of them, and for timing the rules separately).
    """

    recipes: list[LoadedRecipe] = field(default_factory=list)
    errors: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    parsed: list[LoadedRecipe] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def raise_for_errors(self) -> None:
        """Raise one RecipeError (exit 2) listing every error; nothing when there is none."""
        raise_for_errors(self.errors)


def is_fragment(path: Path, root: Path) -> bool:
    """True when ``path`` (below directory ``root``) is a fragment, not a recipe."""
    parts = path.relative_to(root).parts
    return any(part.startswith("_") for part in parts)


@dataclass(slots=True)
class Discovery:
    """Recipe files found (each with the tree its fragments must stay in) and problems."""

    files: list[tuple[Path, Path]] = field(default_factory=list)
    problems: list[Finding] = field(default_factory=list)

    def problem(self, path: Path, message: str) -> None:
        self.problems.append(
            Finding(severity="error", rule="discovery", message=message, recipe=path)
        )


def _tree_of(path: Path) -> Path:
    # A file named alone belongs to the nearest directory holding the fragments it shares
    # with its siblings (``_fragments``), else to its own directory.
    for parent in path.absolute().parents:
        if (parent / "_fragments").is_dir():
            return parent
    return path.parent


def _walk(root: Path, found: Discovery) -> None:
    tree = real_path(root)
    before = len(found.files)

    def unreadable(err: OSError) -> None:
        found.problem(
            Path(err.filename or root),
            f"got an unreadable directory ({err.strerror or err}); expected a readable "
            "recipes folder; fix its permissions",
        )

    for folder, dirs, files in os.walk(root, onerror=unreadable):
        here = Path(folder)
        dirs.sort()
        for name in [*dirs, *sorted(files)]:
            entry = here / name
            if entry.is_symlink() and not _symlink_ok(entry, tree, found):
                continue
            if name in files and entry.suffix in RECIPE_SUFFIXES and not is_fragment(entry, root):
                if entry.is_file():
                    found.files.append((entry, root))
                else:
                    found.problem(
                        entry,
                        "got a recipe name that is not a regular file; "
                        "expected a YAML file; remove it",
                    )
    if len(found.files) == before and not found.problems:
        found.problem(
            root,
            "got no recipe files; expected *.yaml or *.yml recipes (fragments, under _ "
            "names, are not recipes); check the path",
        )


def _symlink_ok(entry: Path, tree: Path, found: Discovery) -> bool:
    """Whether symlink ``entry`` may be followed; records why not."""
    try:
        target = entry.resolve(strict=True)
    except (OSError, RuntimeError) as err:
        found.problem(
            entry,
            f"got a symlink loop or a dangling symlink ({err}); expected a file or folder "
            "inside the recipes tree; remove the link",
        )
        return False
    if not inside(target, (tree,)):
        found.problem(
            entry,
            f"got a symlink to {target}, outside the recipes tree {tree}; expected links "
            "that stay inside it; copy the file in or remove the link",
        )
        return False
    # A linked folder inside the tree is walked where it really lies.
    return not target.is_dir()


def discover(paths: Iterable[Path]) -> Discovery:
    """Recipe files named by ``paths``: files as given, directories searched (no fragments).

    Never loads a file twice. Unreadable folders, symlink loops, symlinks leaving the
    tree and folders without recipes are problems, never an empty success. Raises
    RecipeSyntaxError for a path that does not exist.
    """
    found = Discovery()
    for path in paths:
        if path.is_dir():
            _walk(path, found)
        elif path.is_file():
            tree = _tree_of(path)
            if not path.is_symlink() or _symlink_ok(path, real_path(tree), found):
                found.files.append((path, tree))
        elif path.is_symlink():
            _symlink_ok(path, path.parent.resolve(), found)
        elif path.exists():
            found.problem(
                path,
                "got a path that is not a regular file (a pipe or device); "
                "expected a YAML recipe file; name the file",
            )
        else:
            raise RecipeSyntaxError(f"{path}: no such recipe file or directory")
    found.files = list(dict.fromkeys(found.files))
    return found


def _error_finding(err: RecipeError, recipe: Path) -> Finding:
    rule = "extends" if isinstance(err, ExtendsError) else "syntax"
    if not isinstance(err, ExtendsError | RecipeSyntaxError):
        rule = "schema"
    return Finding(severity="error", rule=rule, message=str(err), recipe=None, chain=(recipe,))


def _validate(resolved: Resolved, path: Path) -> LoadedRecipe | list[Finding]:
    doc = plain(resolved.root)
    source = SourceMap.of(resolved.root)
    try:
        recipe = Recipe.model_validate(doc)
    except ValidationError as err:
        return findings_from_validation(
            err, doc, source, model=Recipe, recipe=path, via=resolved.via
        )
    return LoadedRecipe(recipe, path, resolved.chain, source, resolved.via)


def _duplicate(loaded: LoadedRecipe, first: LoadedRecipe) -> Finding:
    where = loaded.locate(("id",))
    return Finding(
        severity="error",
        rule="schema",
        message=f"duplicate recipe id {loaded.recipe.id!r} (also in {first.source}); "
        "recipe ids are unique",
        location=where,
        field="id",
        chain=loaded.chain_to(where),
        recipe=loaded.source,
    )


def load_recipes(
    paths: Iterable[Path],
    *,
    catalog: Catalog,
    golden: GoldenRegistry,
    policy: PolicyData | None = None,
    run_policy: bool = True,
) -> LoadResult:
    """Load, validate and policy-check every recipe under ``paths`` (see the module doc).

    Never raises for a bad recipe: its problems go to ``errors``; only a path that does
    not exist raises RecipeSyntaxError.
    """
    settings = Settings()
    data = policy if policy is not None else load_policy(settings.catalog_dir)
    result = LoadResult()
    resolver = ExtendsResolver(limits=data.yaml_limits, trees=(settings.recipes_dir,))
    by_id: dict[str, LoadedRecipe] = {}
    found = discover(paths)
    result.errors.extend(found.problems)
    for path, tree in found.files:
        try:
            outcome = _validate(resolver.resolve(path, tree), path)
        except RecipeError as err:
            result.errors.append(_error_finding(err, path))
            continue
        if isinstance(outcome, list):
            result.errors.extend(outcome)
            continue
        if outcome.recipe.id in by_id:
            result.errors.append(_duplicate(outcome, by_id[outcome.recipe.id]))
            continue
        by_id[outcome.recipe.id] = outcome
        result.parsed.append(outcome)
        findings = (
            policy_rules.check(
                outcome.recipe, catalog=catalog, golden=golden, data=data, where=outcome
            )
            if run_policy
            else []
        )
        result.warnings.extend(f for f in findings if not f.is_error)
        errors = [f for f in findings if f.is_error]
        result.errors.extend(errors)
        if not errors:
            result.recipes.append(outcome)
    return result
