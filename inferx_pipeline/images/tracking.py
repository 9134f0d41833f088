"""Which new tags of its pinned image's repository a recipe follows (``engine.track``).

::

    engine:
      image: lmsysorg/sglang-rocm:v0.5.16-rocm720-mi30x-20260730
      track: {tags: ["v*-rocm720-mi30x-*"], newer-than-pinned: true}

``tags`` are fnmatch globs on the tag alone (case-sensitive); ``newer-than-pinned: true``
also requires the tag's version to be greater than the pinned tag's. A tag's version is
its leading part, up to the first ``-`` or ``_``, less one leading ``v``, if the
``packaging`` library parses it as a version: ``v0.5.16-rocm720-mi30x-20260730`` -> 0.5.16,
``1.2.0rc0.post1`` -> 1.2.0rc0.post1, ``nightly-a8d1`` -> none. Builds of one version
(``...-20260730`` vs ``...-20260801``) are therefore not newer than each other, and a tag
without a version is never newer.

``runs_at(rule, pinned, candidate)``: whether the recipe runs at an image at all (sweep
partitions, backfills over old tags): false for another repository; true for the pinned
tag itself whatever the rule; otherwise the globs decide; with no rule, only the pinned
image. ``follows`` adds ``newer-than-pinned``: which new tags the image sensor measures
without being asked.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from typing import Annotated, Self

from packaging.version import InvalidVersion, Version
from pydantic import Field, model_validator

from inferx_pipeline.images.refs import ImageRef
from inferx_pipeline.strict import FrozenModel

_LEADING = re.compile(r"v?([0-9][^-_]*)")

TagGlob = Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z0-9_.\-*?\[\]!]+$")]


def tag_version(tag: str) -> Version | None:
    """The version a tag starts with (see the module doc), or None when it has none."""
    match = _LEADING.match(tag)
    if match is None:
        return None
    try:
        return Version(match.group(1))
    except InvalidVersion:
        return None


class TrackRule(FrozenModel):
    """The tags of the pinned image's repository a recipe follows besides the pinned one."""

    tags: tuple[TagGlob, ...] = Field(
        default=(),
        description=(
            "fnmatch globs on the tag (e.g. nightly-*, v*-rocm720-mi30x-*); a tag is followed "
            "if it matches any. Empty = every tag (then newer-than-pinned must be true)."
        ),
    )
    newer_than_pinned: bool = Field(
        default=False,
        alias="newer-than-pinned",
        description=(
            "Also require the tag's version (its leading version part, e.g. 0.5.16 of "
            "v0.5.16-rocm720-mi30x) to be greater than the pinned tag's; tags without a "
            "version are then never followed."
        ),
    )

    @model_validator(mode="after")
    def _follows_something(self) -> Self:
        if not self.tags and not self.newer_than_pinned:
            raise ValueError(
                "track needs tags (globs such as nightly-*) or newer-than-pinned: true; "
                "to follow only the pinned image, leave track out"
            )
        return self

    def matches(self, tag: str) -> bool:
        """True when ``tag`` matches one of the globs (or there are none)."""
        return not self.tags or any(fnmatchcase(tag, glob) for glob in self.tags)


def _is_pinned(pinned: ImageRef, candidate: ImageRef) -> bool:
    if pinned.tag is not None:
        return candidate.tag == pinned.tag
    return candidate.digest is not None and candidate.digest == pinned.digest


def runs_at(rule: TrackRule | None, pinned: ImageRef, candidate: ImageRef) -> bool:
    """Whether a recipe pinned to ``pinned`` with ``rule`` runs at ``candidate`` at all.

    What a sweep partition and a backfill ask: false for another repository; true for the
    pinned tag (or, for an image pinned by digest only, the same digest) whatever the
    rule; otherwise the rule's globs decide (older tags included: history can be
    replayed), and no rule runs at nothing else.
    """
    if not pinned.same_repository(candidate):
        return False
    if _is_pinned(pinned, candidate):
        return True
    return rule is not None and candidate.tag is not None and rule.matches(candidate.tag)


def follows(rule: TrackRule | None, pinned: ImageRef, candidate: ImageRef) -> bool:
    """Whether a new ``candidate`` tag should be measured automatically (the image sensor).

    ``runs_at``, and with ``newer-than-pinned`` a version greater than the pinned tag's;
    against a pinned tag without a version (or a digest-only pin) that admits nothing new.
    """
    if not runs_at(rule, pinned, candidate):
        return False
    if rule is None or not rule.newer_than_pinned or _is_pinned(pinned, candidate):
        return True
    assert candidate.tag is not None  # runs_at matched the rule's globs on it
    have = tag_version(candidate.tag)
    base = tag_version(pinned.tag) if pinned.tag is not None else None
    return have is not None and base is not None and have > base
