"""The baseline a pull request's description names, as InferenceX's authors write it.

A line ``Baseline recipe: <what> [· <image>]`` anywhere in the description; ``<what>`` is
a recipe id (``dsr1-fp8-h200-sglang``) or an earlier pull request (``#3295``, whose
recipe it swept), ``<image>`` the baseline's image (a full reference or a tag; default:
the newest image the leaderboard shows). Backticks around either are allowed, and so is
``|`` or ``,`` in place of ``·``. Pure: resolving ``#N`` to a recipe is the caller's.
"""

from __future__ import annotations

import re

from pydantic import Field, model_validator

from inferx_pipeline.strict import FrozenModel

_LINE = re.compile(r"^[ \t]*baseline recipe:[ \t]*(?P<rest>.*?)[ \t]*$", re.I | re.M)
_WHAT = re.compile(r"`?(?:#(?P<pr>\d+)|(?P<recipe>[A-Za-z0-9][\w.\-]*))`?")
_IMAGE = re.compile(r"`?(?P<image>[^\s`]+)`?")
_SEPARATORS = "·|,"


class BaselineRef(FrozenModel):
    """What a ``Baseline recipe:`` line names: a recipe or a PR, and maybe an image."""

    recipe: str | None = Field(default=None, description="A recipe id.")
    pr: int | None = Field(default=None, ge=1, description="An earlier PR's number.")
    image: str | None = Field(default=None, description="The baseline's image or tag.")

    @model_validator(mode="after")
    def _one_target(self) -> BaselineRef:
        if (self.recipe is None) == (self.pr is None):
            raise ValueError("a baseline names exactly one of a recipe and a pull request")
        return self

    def describe(self) -> str:
        """The reference as the description wrote it, e.g. ``#3295 · v0.5.9``."""
        what = f"#{self.pr}" if self.pr is not None else str(self.recipe)
        return f"{what} · {self.image}" if self.image else what


def baseline_ref(body: str) -> BaselineRef | None:
    """The baseline ``body``'s first ``Baseline recipe:`` line names; None without one (or
    when the line names nothing readable)."""
    line = _LINE.search(body)
    if line is None:
        return None
    rest = line["rest"]
    what = _WHAT.match(rest)
    if what is None:
        return None
    tail = rest[what.end() :].strip()
    image = None
    if tail and tail[0] in _SEPARATORS:
        found = _IMAGE.match(tail[1:].strip())
        image = found["image"] if found else None
    pr = int(what["pr"]) if what["pr"] else None
    return BaselineRef(recipe=what["recipe"], pr=pr, image=image)
