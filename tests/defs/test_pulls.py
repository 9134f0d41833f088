"""The ``pull_requests`` sensor: a run per labeled PR change, tagged; superseded runs
cancelled; unlabeled PRs left alone; the forge's failure as the skip reason."""

from __future__ import annotations

from collections.abc import Iterator

import dagster as dg
import pytest

from inferx_pipeline.defs.pulls import (
    HEAD_TAG,
    LABEL_TAG,
    PR_OP,
    PR_TAG,
    ForgeResource,
)
from tests.defs.conftest import Project, tick
from tests.services.forge_standin import ForgeStandin

OWNER, REPO = "octo-org", "recipes"
QUEUED = {
    "run_coordinator": {
        "module": "dagster._core.run_coordinator",
        "class": "QueuedRunCoordinator",
    }
}


@pytest.fixture
def github() -> Iterator[ForgeStandin]:
    with ForgeStandin(OWNER, REPO) as standin:
        yield standin


@pytest.fixture
def queued() -> Iterator[dg.DagsterInstance]:
    """An instance whose runs queue (so a cancelled one shows as CANCELED)."""
    with dg.instance_for_test(overrides=QUEUED) as instance:
        yield instance


def _defs(project: Project, github: ForgeStandin) -> dg.Definitions:
    return project.definitions(forge=ForgeResource(repo=f"{OWNER}/{REPO}", api_url=github.url))


def test_a_labeled_pr_gets_a_tagged_run_and_each_push_or_label_change_another(
    project: Project, github: ForgeStandin, queued: dg.DagsterInstance
) -> None:
    defs = _defs(project, github)
    github.add_pull(12, head_sha="a" * 40, labels=["full-sweep-fail-fast", "bug"])
    github.add_pull(13, head_sha="c" * 40, labels=["documentation"])  # not ours: no run
    first = tick(defs, "pull_requests", queued, None)
    (request,) = first.run_requests
    ours = {PR_TAG: "12", HEAD_TAG: "a" * 40, LABEL_TAG: "full-sweep-fail-fast"}
    assert ours.items() <= request.tags.items()
    assert request.run_config["ops"][PR_OP]["config"] == {"number": 12, "head_sha": "a" * 40}
    # Nothing changed: nothing requested, and the reason says so.
    idle = tick(defs, "pull_requests", queued, first.cursor)
    assert idle.run_requests == [] and "no labeled pull request changed" in idle.skip_message
    # A push, then a label change: each a new run.
    github.pull(12).head_sha = "b" * 40
    pushed = tick(defs, "pull_requests", queued, first.cursor)
    (again,) = pushed.run_requests
    assert again.tags[HEAD_TAG] == "b" * 40 and again.run_key != request.run_key
    github.pull(12).labels = ["sweep-enabled"]
    relabeled = tick(defs, "pull_requests", queued, pushed.cursor)
    (third,) = relabeled.run_requests
    assert third.tags[LABEL_TAG] == "sweep-enabled"


def test_the_forge_unreachable_and_no_repository_are_skip_reasons(
    project: Project, github: ForgeStandin, instance: dg.DagsterInstance
) -> None:
    unset = tick(project.definitions(), "pull_requests", instance, None)
    assert unset.skip_message == "no forge repository to watch (set INFERX_FORGE_REPO)"
    github.fail(f"/repos/{OWNER}/{REPO}/pulls", 503, "Service Unavailable")
    down = tick(_defs(project, github), "pull_requests", instance, None)
    assert down.skip_message.startswith(f"cannot list the pull requests of {OWNER}/{REPO}: ")
    assert "503" in down.skip_message and "INFERX_FORGE_REPO" in down.skip_message
