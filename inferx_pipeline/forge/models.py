"""What the pipeline needs of a forge's pull requests, comments and commits.

::

    pull = PullRequest.from_github(requests.get(url).json())
    pull.head_sha, pull.base_ref, pull.labels   # ("a1b2...", "main", ("sweep", "h200"))

Each model is built from GitHub's REST JSON by ``from_github``, which picks the fields it
needs and ignores every other key (GitHub adds keys over time). A required key that is
absent, or has the wrong type, is a ForgeError naming it by its dotted path (``head.sha``);
the caller adds which request answered it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal, Self, TypeVar

from pydantic import Field, ValidationError

from inferx_pipeline.errors import ForgeError
from inferx_pipeline.strict import FrozenModel

_ABSENT = object()
_M = TypeVar("_M", bound=FrozenModel)


def _at(payload: object, path: str, what: str) -> Any:
    """The value at dotted ``path`` of ``payload``; ForgeError naming the path when absent."""
    value: object = payload
    for key in path.split("."):
        value = value.get(key, _ABSENT) if isinstance(value, Mapping) else _ABSENT
        if value is _ABSENT:
            raise ForgeError(
                f"{what} JSON: missing field {path}; expected GitHub's {what} object with "
                f"{path}; check that the URL is a GitHub REST API v3 endpoint"
            )
    return value


def _build(model: type[_M], what: str, fields: dict[str, Any]) -> _M:
    try:
        return model.model_validate(fields)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ForgeError(
            f"{what} JSON: field {where}: {first['msg']} (got {first.get('input')!r}); "
            f"expected GitHub's {what} object"
        ) from err


class PullRequest(FrozenModel):
    """One pull request as the pipeline sees it: its head, its base, its labels, its fate."""

    number: int = Field(description="The PR number, unique in its repository.")
    title: str
    body: str = Field(description="The PR's description (Markdown); empty when it has none.")
    state: Literal["open", "closed"]
    head_sha: str = Field(description="Commit SHA of the PR's head (the code to measure).")
    head_ref: str = Field(description="Branch name of the head (in the head repository).")
    base_sha: str = Field(description="Commit SHA of the base branch when GitHub last looked.")
    base_ref: str = Field(description="Branch the PR merges into.")
    labels: tuple[str, ...] = Field(description="Label names, in GitHub's order.")
    author: str = Field(description="Login of the PR's author.")
    html_url: str
    merged: bool
    merged_at: datetime | None
    merge_commit_sha: str | None = Field(
        description="The merge commit once merged; before that GitHub's test merge, or None."
    )
    draft: bool

    @classmethod
    def from_github(cls, payload: Mapping[str, Any]) -> Self:
        """From a pull request object (``GET /pulls/{n}`` or an item of ``GET /pulls``).

        List items carry no ``merged``; it is then read from ``merged_at``.
        """
        what = "pull request"
        merged_at = _at(payload, "merged_at", what)
        labels = _at(payload, "labels", what)
        if not isinstance(labels, list):
            raise ForgeError(f"{what} JSON: field labels: got {labels!r}; expected a list")
        return _build(
            cls,
            what,
            {
                "number": _at(payload, "number", what),
                "title": _at(payload, "title", what),
                "body": payload.get("body") or "",  # GitHub sends null for no description
                "state": _at(payload, "state", what),
                "head_sha": _at(payload, "head.sha", what),
                "head_ref": _at(payload, "head.ref", what),
                "base_sha": _at(payload, "base.sha", what),
                "base_ref": _at(payload, "base.ref", what),
                "labels": tuple(_at(label, "name", "label") for label in labels),
                "author": _at(payload, "user.login", what),
                "html_url": _at(payload, "html_url", what),
                "merged": payload.get("merged", merged_at is not None),
                "merged_at": merged_at,
                "merge_commit_sha": payload.get("merge_commit_sha"),
                "draft": payload.get("draft", False),  # absent on forges without drafts
            },
        )


class Comment(FrozenModel):
    """One comment on a pull request's conversation (an issue comment)."""

    id: int = Field(description="The comment's id, for editing it in place.")
    body: str
    html_url: str

    @classmethod
    def from_github(cls, payload: Mapping[str, Any]) -> Self:
        """From an issue comment object (``GET``/``POST /issues/{n}/comments``)."""
        what = "issue comment"
        return _build(
            cls,
            what,
            {
                "id": _at(payload, "id", what),
                "body": _at(payload, "body", what),
                "html_url": _at(payload, "html_url", what),
            },
        )


class Commit(FrozenModel):
    """One commit: its SHA and message (the message's first line is its title)."""

    sha: str
    message: str

    @classmethod
    def from_github(cls, payload: Mapping[str, Any]) -> Self:
        """From a commit object (``GET /commits/{sha}``)."""
        what = "commit"
        return _build(
            cls,
            what,
            {"sha": _at(payload, "sha", what), "message": _at(payload, "commit.message", what)},
        )
