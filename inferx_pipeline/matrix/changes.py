"""What changed: recipe ids affected by changed files, a changelog, or a previous job list.

The edge of selection: these functions read git, files and the InferenceX changelog and
return plain sets that ``Selection`` filters on.

- changed recipe file -> that recipe; changed golden curve -> recipes that name it;
  changed fragment -> every recipe whose ``extends`` chain contains it;
- InferenceX ``perf-changelog.yaml`` -> recipe ids matching its entries' config-key globs;
- a previous ``inferx matrix --format json`` file -> the fingerprints it already has.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Protocol

import yaml

from inferx_pipeline.errors import MatrixError
from inferx_pipeline.recipes.schema import Recipe


class Traced(Protocol):
    """A loaded recipe: the recipe, its file and its ``extends`` chain (recipe first)."""

    @property
    def recipe(self) -> Recipe: ...

    @property
    def source(self) -> Path: ...

    @property
    def chain(self) -> tuple[Path, ...]: ...


def changed_files(repo: Path, base: str, head: str) -> list[Path]:
    """Absolute paths of files changed between git revisions ``base`` and ``head`` in ``repo``.

    Runs ``git diff --name-only base head``; MatrixError with git's message on failure.
    """
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), "diff", "--name-only", base, head],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError) as err:
        detail = getattr(err, "stderr", "") or str(err)
        raise MatrixError(
            f"{repo}: git diff --name-only {base} {head} failed: {detail.strip()}; "
            "check the revisions and that the path is a git checkout"
        ) from err
    root = repo.resolve()
    return [root / line for line in done.stdout.splitlines() if line.strip()]


def affected_recipes(
    changed: Iterable[Path], loaded: Sequence[Traced], golden_dir: Path
) -> frozenset[str]:
    """Ids of recipes whose file, fragment or (synthetic-acceptance) golden curve changed."""
    changed_set = {p.resolve() for p in changed}
    golden_root = golden_dir.resolve()
    curves = {p.stem for p in changed_set if p.parent == golden_root and p.suffix == ".yaml"}
    hit: set[str] = set()
    for item in loaded:
        chain = {p.resolve() for p in (item.source, *item.chain)}
        spec = item.recipe.speculative
        # Only synthetic acceptance reads the curve; a real-acceptance recipe may name it.
        uses_curve = spec.acceptance == "synthetic" and spec.curve in curves
        if chain & changed_set or uses_curve:
            hit.add(item.recipe.id)
    return frozenset(hit)


def changelog_globs(path: Path, *, last: int) -> tuple[str, ...]:
    """Config-key globs of the last ``last`` entries of an InferenceX perf-changelog.yaml."""
    try:
        entries = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, yaml.YAMLError) as err:
        raise MatrixError(f"{path}: cannot read changelog: {err}") from err
    if not isinstance(entries, list):
        raise MatrixError(f"{path}: expected a list of changelog entries")
    globs: list[str] = []
    for entry in entries[-last:] if last > 0 else []:
        globs.extend(str(g) for g in entry.get("config-keys", []))
    return tuple(dict.fromkeys(globs))


def matching_ids(recipe_ids: Iterable[str], globs: Sequence[str]) -> frozenset[str]:
    """The ids matching any of ``globs`` (fnmatch, case-sensitive)."""
    return frozenset(i for i in recipe_ids if any(fnmatchcase(i, g) for g in globs))


def known_fingerprints(path: Path) -> frozenset[str]:
    """Fingerprints in a previous job list (``inferx matrix --format json`` output)."""
    try:
        doc = json.loads(path.read_text())
        if not isinstance(doc, list):
            raise TypeError(f"top level is {type(doc).__name__}, not a list")
        return frozenset(str(job["fingerprint"]) for job in doc)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise MatrixError(
            f"{path}: cannot read a previous job list: {err}; expected the JSON list that "
            "inferx matrix --format json writes"
        ) from err
