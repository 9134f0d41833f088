"""A recipe's image history: the images it pinned, InferenceX ran, or its track rule admits.

Each source gives ``ImageHistoryEntry`` rows (``source`` says which; ``ref`` points at the
evidence):

- ``pinned``: the recipe's image now (``when`` and ``ref`` None);
- ``git`` (``git_history``): each image the recipe file pinned over its git history,
  newest first, one row per commit that changed the effective ``engine.image`` (the
  recipe file's own value, else its ``extends:`` fragments', as they were at that commit);
  ``when`` = committer date, ``ref`` = commit SHA. A version that does not parse as YAML
  or names no image contributes nothing;
- ``changelog`` (``changelog_history``): images an InferenceX perf-changelog.yaml names for
  the recipe, newest entry (last in the file) first and, within an entry, in the order its
  description names them, by the rule in ``images/changelog.py``;
  ``when`` None (entries carry no date), ``ref`` = the entry's pr-link;
- ``registry`` (``registry_history``): tags of the recipe's repository it runs at
  (``images/tracking.py``), with ``ref`` = the tag's digest, newest version first (tags
  without a version after them, by name); ``when`` None (the tag list has no dates).

Git runs as a subprocess here and nowhere else in this module; the rest is pure.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field

from inferx_pipeline.errors import GitRepoError
from inferx_pipeline.gitrepo import run_git
from inferx_pipeline.images.changelog import ChangelogEntry, images_in_line
from inferx_pipeline.images.refs import ImageRef
from inferx_pipeline.images.registry import RegistryClient
from inferx_pipeline.images.tracking import TrackRule, runs_at, tag_version
from inferx_pipeline.recipes.schema import Recipe
from inferx_pipeline.strict import FrozenModel

Source = Literal["pinned", "git", "changelog", "registry"]
_MAX_EXTENDS_DEPTH = 16


class ImageHistoryEntry(FrozenModel):
    """One image a recipe ran or may run, and where that is known from."""

    recipe_id: str = Field(description="The recipe's id.")
    image: str = Field(description="Image reference, spelled as the recipe spells its image.")
    source: Source = Field(description="pinned | git | changelog | registry.")
    when: datetime | None = Field(description="Commit date (git); None for other sources.")
    ref: str | None = Field(
        description="Evidence: commit SHA (git), pr-link (changelog), digest (registry)."
    )


def pinned_entry(recipe: Recipe) -> ImageHistoryEntry:
    """The recipe's current image as a ``pinned`` row."""
    return ImageHistoryEntry(
        recipe_id=recipe.id, image=recipe.engine.image, source="pinned", when=None, ref=None
    )


def _image_at(repo: Path, sha: str, path: str, depth: int = 0) -> str | None:
    """``engine.image`` of ``path`` at ``sha``, following its ``extends:`` (later wins)."""
    if depth > _MAX_EXTENDS_DEPTH:
        return None  # an extends cycle at that commit: the loader rejected it then too
    try:
        text = run_git(repo, "show", f"{sha}:{path}").decode()
        doc = yaml.safe_load(text)
    except (GitRepoError, yaml.YAMLError, UnicodeDecodeError):
        return None  # absent or broken at that commit: no evidence either way
    if not isinstance(doc, dict):
        return None
    engine = doc.get("engine")
    if isinstance(engine, dict) and isinstance(engine.get("image"), str):
        return str(engine["image"])
    targets = doc.get("extends") or []
    for target in reversed([targets] if isinstance(targets, str) else targets):
        if isinstance(target, str):
            fragment = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
            image = _image_at(repo, sha, fragment, depth + 1)
            if image is not None:
                return image
    return None


def _repo_relative(repo: Path, paths: Sequence[Path | str]) -> list[str]:
    if not any(Path(p).is_absolute() for p in paths):
        return [Path(p).as_posix() for p in paths]  # works on a bare mirror too
    root = Path(run_git(repo, "rev-parse", "--show-toplevel").decode().strip()).resolve()
    return [
        (Path(p).resolve().relative_to(root) if Path(p).is_absolute() else Path(p)).as_posix()
        for p in paths
    ]


def git_history(
    repo: Path, recipe_id: str, chain: Sequence[Path | str], *, rev: str = "HEAD"
) -> list[ImageHistoryEntry]:
    """Images the recipe pinned over the git history of ``repo`` up to ``rev``, newest first.

    ``chain`` is the recipe file then its ``extends:`` fragments (``LoadedRecipe.chain``):
    absolute paths inside the checkout ``repo``, or paths relative to its top level (the
    only form a bare repository such as a ``WatchedRepo`` mirror accepts). The
    commits that touched any of them are read oldest first; a row is written for each
    commit whose effective image differs from the one before. Renames are not followed.
    GitRepoError when ``repo`` is not a git checkout or ``rev`` is unknown.
    """
    if not chain:
        return []
    paths = _repo_relative(repo, chain)
    log = run_git(repo, "log", "--reverse", "--format=%H %cI", rev, "--", *paths).decode()
    rows: list[ImageHistoryEntry] = []
    previous: str | None = None
    for line in log.splitlines():
        sha, _, date = line.partition(" ")
        image = _image_at(repo, sha, paths[0])
        if image is not None and image != previous:
            when = datetime.fromisoformat(date)
            rows.append(
                ImageHistoryEntry(
                    recipe_id=recipe_id, image=image, source="git", when=when, ref=sha
                )
            )
            previous = image
    return rows[::-1]


def changelog_keys(recipe: Recipe) -> tuple[str, ...]:
    """Keys a changelog entry may name the recipe by: its id, and its InferenceX key."""
    origin = recipe.imported_from
    return (recipe.id,) if origin is None else (recipe.id, origin.key)


def changelog_history(recipe: Recipe, entries: Sequence[ChangelogEntry]) -> list[ImageHistoryEntry]:
    """Images of the recipe's repository the changelog ``entries`` name for it, newest first.

    ``entries`` in file order (``read_changelog``); see ``images/changelog.py`` for the rule.
    """
    pinned = ImageRef.parse(recipe.engine.image)
    keys = changelog_keys(recipe)
    rows: list[ImageHistoryEntry] = []
    for entry in reversed(entries):
        if not entry.applies_to(keys):
            continue
        images: list[str] = []
        for line in entry.description:
            images.extend(
                i for i in images_in_line(line, pinned, recipe.engine.framework) if i not in images
            )
        rows.extend(
            ImageHistoryEntry(
                recipe_id=recipe.id, image=i, source="changelog", when=None, ref=entry.pr_link
            )
            for i in images
        )
    return rows


def _newest_first(tags: Iterable[str]) -> list[str]:
    versioned = sorted(((v, t) for t in tags if (v := tag_version(t)) is not None), reverse=True)
    plain = sorted(t for t in tags if tag_version(t) is None)
    return [t for _, t in versioned] + plain


def registry_history(
    recipe_id: str, image: str, track: TrackRule | None, client: RegistryClient
) -> list[ImageHistoryEntry]:
    """Tags of ``image``'s repository the recipe runs at (``runs_at``), with their digests.

    Older tags included: this is what a backfill can replay, not what the image sensor
    measures unasked (``follows``).

    One tag listing, then one digest request per admitted tag. RegistryError (from the
    client) when the registry cannot be read.
    """
    pinned = ImageRef.parse(image)
    admitted = [
        tag
        for tag in client.tags(pinned.repository)
        if runs_at(track, pinned, ImageRef.parse(pinned.with_tag(tag)))
    ]
    return [
        ImageHistoryEntry(
            recipe_id=recipe_id,
            image=pinned.with_tag(tag),
            source="registry",
            when=None,
            ref=client.digest(pinned.repository, tag),
        )
        for tag in _newest_first(admitted)
    ]


def image_history(
    recipe: Recipe,
    *,
    repo: Path | None = None,
    chain: Sequence[Path | str] = (),
    changelog: Sequence[ChangelogEntry] = (),
    registry: RegistryClient | None = None,
) -> list[ImageHistoryEntry]:
    """Every source that is given, in the order pinned, git, changelog, registry.

    Git runs when ``repo`` is given (``chain`` as for ``git_history``); the registry when
    ``registry`` is the client for the recipe's image.
    """
    rows = [pinned_entry(recipe)]
    if repo is not None:
        rows.extend(git_history(repo, recipe.id, chain))
    rows.extend(changelog_history(recipe, changelog))
    if registry is not None:
        rows.extend(registry_history(recipe.id, recipe.engine.image, recipe.engine.track, registry))
    return rows
