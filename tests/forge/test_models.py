"""PullRequest, Comment and Commit from GitHub's own published examples, and from broken JSON."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from inferx_pipeline.errors import ForgeError
from inferx_pipeline.forge.models import Comment, Commit, PullRequest
from tests.services.forge_standin import example

SHA = "6dcb09b5b57875f334f61aebed695e2e4193db5e"  # the examples' SHA


def test_a_pull_request_from_githubs_example() -> None:
    pull = PullRequest.from_github(example("pull.json"))
    assert pull == PullRequest(
        number=1347,
        title="Amazing new feature",
        body="Please pull these awesome changes in!",
        state="open",
        head_sha=SHA,
        head_ref="new-topic",
        base_sha=SHA,
        base_ref="master",
        labels=("bug",),
        author="octocat",
        html_url="https://github.com/octocat/Hello-World/pull/1347",
        merged=False,  # as the example says, although it also has a merged_at
        merged_at=datetime(2011, 1, 26, 19, 1, 12, tzinfo=UTC),
        merge_commit_sha="e5bd3914e2e596debea16f433f57875b5b90bcd6",
        draft=False,
    )


def test_no_description_is_an_empty_body() -> None:
    payload = copy.deepcopy(example("pull.json"))
    payload["body"] = None  # what GitHub sends for a PR without a description
    assert PullRequest.from_github(payload).body == ""


def test_a_list_item_has_no_merged_so_merged_at_tells() -> None:
    item = example("pulls-list.json")[0]
    assert "merged" not in item
    assert PullRequest.from_github(item).merged  # its merged_at is set


@pytest.mark.parametrize(
    "name", ["webhook-pull-request-labeled.json", "webhook-pull-request-synchronize.json"]
)
def test_a_webhooks_pull_request_has_the_same_shape(name: str) -> None:
    pull = PullRequest.from_github(example(name)["pull_request"])
    assert (pull.number, pull.head_ref, pull.base_ref, pull.labels) == (
        2,
        "changes",
        "master",
        ("bug",),
    )
    assert pull.head_sha == "ec26c3e57ca3a959ca5aad62de7213c562f8c821"


def test_a_comment_and_a_commit_from_githubs_examples() -> None:
    assert Comment.from_github(example("issue-comment.json")) == Comment(
        id=1,
        body="Me too",
        html_url="https://github.com/octocat/Hello-World/issues/1347#issuecomment-1",
    )
    assert Comment.from_github(example("issue-comments-list.json")[0]).id == 1
    assert Commit.from_github(example("commit.json")) == Commit(sha=SHA, message="Fix all the bugs")


def _without(payload: dict[str, Any], path: str) -> dict[str, Any]:
    broken = copy.deepcopy(payload)
    *parents, last = path.split(".")
    target = broken
    for key in parents:
        target = target[key]
    del target[last]
    return broken


@pytest.mark.parametrize("path", ["number", "head.sha", "base.ref", "user.login", "merged_at"])
def test_a_missing_field_is_named(path: str) -> None:
    with pytest.raises(ForgeError) as caught:
        PullRequest.from_github(_without(example("pull.json"), path))
    assert str(caught.value).startswith(
        f"pull request JSON: missing field {path}; expected GitHub's pull request object"
    )


def test_a_wrong_type_or_a_nameless_label_is_named() -> None:
    payload = copy.deepcopy(example("pull.json"))
    payload["number"] = "twelve"
    with pytest.raises(ForgeError, match=r"^pull request JSON: field number: .*'twelve'"):
        PullRequest.from_github(payload)
    payload = copy.deepcopy(example("pull.json"))
    payload["labels"] = [{"id": 1}]
    with pytest.raises(ForgeError, match=r"^label JSON: missing field name"):
        PullRequest.from_github(payload)
    with pytest.raises(ForgeError, match=r"^commit JSON: missing field commit.message"):
        Commit.from_github(_without(example("commit.json"), "commit.message"))
    with pytest.raises(ForgeError, match=r"^issue comment JSON: missing field body"):
        Comment.from_github(_without(example("issue-comment.json"), "body"))
