"""A push to a pull request cancels its running sweep, in a real ``dagster dev``.

One ``dagster dev`` (webserver, daemon, code server) for the module, its code location
pointed at a real git repository served over HTTP (``refs/pull/N/head``) and at the
GitHub stand-in, as a deployment watching PRs is (``INFERX_FORGE_*``,
``INFERX_RECIPES_REPO``, read when the location loads). Each test opens a PR that adds a
seed recipe, labeled ``full-sweep-fail-fast``; the ``pull_requests`` sensor, evaluated
here on the same instance, requests its run, which is submitted over GraphQL with
simulated points slow enough to be caught mid-sweep. Once the run is STARTED and one of
its simulator servers exists (``starting``: its process is up, usually still starting;
``measuring``: a request of a point is open on it), the PR gets a new head and the
sensor ticks again: it must request one run, for the new head; the old run must end
CANCELED with its sweep's record written; and nothing of it may be left running (its
simulator servers' process groups, from the process ledger, and its run worker).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any, Literal

import dagster as dg
import psutil
import pytest

from inferx_pipeline.defs.definitions import build_definitions
from inferx_pipeline.defs.devserver import DagsterDev
from inferx_pipeline.defs.execute import graphql_client, local_instance
from inferx_pipeline.defs.pulls import HEAD_TAG, PR_JOB, PR_TAG
from inferx_pipeline.launch.base import free_port
from inferx_pipeline.launch.ownership import OwnedGroup, ProcessLedger, group_members
from inferx_pipeline.pr_run import report_dir
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.artifacts import ArtifactStore
from inferx_pipeline.sweep.runs import load_run
from tests.defs.conftest import tick
from tests.defs.test_dagster_dev import READY_DEADLINE_S, TERMINAL
from tests.gittools import IDENTITY
from tests.paths import ROOT
from tests.prs.pulls import OWNER, REPO, Forge, recipe_file
from tests.services.forge_standin import ForgeStandin
from tests.services.git_http import ServedRepo

SEED = "qwen3.827b-fp8-h200-vllm-mtp"
LABEL = "full-sweep-fail-fast"
# Real-time simulated points (10 requests per unit of concurrency, the default size): the
# sweep lasts minutes, so it is surely mid-point when the push comes.
SLOW = {"resources": {"launcher": {"config": {"time_scale": 1.0, "load_time_s": 0}}}}
STARTED_DEADLINE_S = 180.0  # queue, git fetch, gate, a simulator's start on a loaded box
CANCELED_DEADLINE_S = 120.0  # the cut point, its record, the rows and the site rebuilt
GONE_DEADLINE_S = 30.0
POLL_S = 0.25


class PrDev:
    """The running server, the forge behind it, and the settings its location loaded."""

    def __init__(self, server: DagsterDev, forge: Forge, settings: Settings) -> None:
        self.server = server
        self.forge = forge
        self.settings = settings


@pytest.fixture(scope="module")
def pr_dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrDev]:
    base = tmp_path_factory.mktemp("pr-dev")
    saved = dict(os.environ)
    # Git (the served repo's commits here, the run worker's fetches there) with a fixed
    # identity and no user config, as tests.gittools.isolate_git does for one test.
    os.environ.update(IDENTITY)
    # Read-only forge (nothing posted) and the default SQLite results, whatever this
    # machine's environment holds.
    for name in ("GITHUB_TOKEN", "INFERX_DATABASE_URL"):
        os.environ.pop(name, None)
    try:
        with ServedRepo(base / "served") as served, ForgeStandin(OWNER, REPO) as github:
            forge = Forge(served, github, base)
            # What the code location reads when it loads: the forge and the recipe repo.
            os.environ.update(
                {
                    "INFERX_ROOT": str(forge.settings.root),
                    "INFERX_STATE_DIR": str(forge.settings.state),
                    "INFERX_FORGE_REPO": f"{OWNER}/{REPO}",
                    "INFERX_FORGE_API": github.url,
                    "INFERX_RECIPES_REPO": served.url,
                }
            )
            settings = Settings()
            local_instance(settings.dagster_home).dispose()  # the embedded dagster.yaml
            server = DagsterDev(
                ROOT / "workspace.yaml",
                settings.dagster_home,
                port=free_port(),
                log=base / "dagster-dev.log",
                env=dict(os.environ),
            )
            with server:
                server.wait_ready(READY_DEADLINE_S)
                yield PrDev(server, forge, settings)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _owned(settings: Settings, run_id: str) -> list[OwnedGroup]:
    """The simulator process groups the ledger records for Dagster run ``run_id``."""
    ledger = ProcessLedger(settings.state / "owned")
    return [entry for entry in ledger.entries() if entry.owner.run_id == run_id]


Phase = Literal["starting", "measuring"]


def _serving(pgid: int) -> bool:
    """Whether a process of simulator group ``pgid`` holds an open TCP connection: a
    request of a point (at time scale 1 each lasts seconds; a health check, an instant)."""
    for pid in group_members(pgid):
        try:
            connections = psutil.Process(pid).net_connections(kind="tcp")
        except psutil.NoSuchProcess:
            continue
        if any(c.status == psutil.CONN_ESTABLISHED for c in connections):
            return True
    return False


def _wait_for_server(
    client: Any, settings: Settings, run_id: str, phase: Phase
) -> list[OwnedGroup]:
    """Poll until ``run_id`` is STARTED with a simulator server in ``phase``; the ledger
    entries of its live servers."""
    deadline = time.monotonic() + STARTED_DEADLINE_S
    status = None
    while time.monotonic() < deadline:
        status = client.get_run_status(run_id)
        assert status not in TERMINAL, f"run {run_id} ended {status} before it was pushed"
        live = [e for e in _owned(settings, run_id) if group_members(e.pgid)]
        ready = live if phase == "starting" else [e for e in live if _serving(e.pgid)]
        if status == dg.DagsterRunStatus.STARTED and ready:
            return live
        time.sleep(POLL_S)  # polling the webserver and the process table, under a deadline
    raise AssertionError(f"no simulator server {phase} for run {run_id} (status {status})")


def _wait_for_status(client: Any, run_id: str) -> dg.DagsterRunStatus:
    deadline = time.monotonic() + CANCELED_DEADLINE_S
    while time.monotonic() < deadline:
        status: dg.DagsterRunStatus = client.get_run_status(run_id)
        if status in TERMINAL:
            return status
        time.sleep(POLL_S)  # polling the webserver for the run's end, under a deadline
    raise AssertionError(f"run {run_id} still {status} {CANCELED_DEADLINE_S:.0f} s after cancel")


def _left_behind(settings: Settings, run_id: str, seen: dict[int, OwnedGroup]) -> list[str]:
    """What of run ``run_id`` still runs: members of its simulator groups (seen earlier or
    still in the ledger) and its run worker (the ledger's owner process)."""
    groups = {**seen, **{e.pgid: e for e in _owned(settings, run_id)}}
    left = [f"simulator group {pgid}: {m}" for pgid in groups if (m := group_members(pgid))]
    workers = {entry.owner for entry in groups.values()}
    left += [f"run worker {owner.pid}" for owner in workers if owner.alive()]
    return left


@pytest.mark.parametrize(("number", "phase"), [(21, "starting"), (22, "measuring")])
def test_a_push_cancels_the_running_pr_sweep_and_leaves_no_process(
    pr_dev: PrDev, number: int, phase: Phase
) -> None:
    forge, settings = pr_dev.forge, pr_dev.settings
    path = recipe_file(SEED)
    if not forge.base:  # one base for the module's PRs (the served repo is shared)
        forge.base = forge.served.commit(forge.project(path), "base without the seed")
    text = (ROOT / path).read_text()
    first_head = forge.open_pr(number, {path: text}, [LABEL])

    # The sensor's request, as the daemon would launch it, but submitted over GraphQL
    # with the slow launcher (the sensor is off in the deployment: ticks come from here).
    defs = build_definitions(settings)
    instance = local_instance(settings.dagster_home)
    client = graphql_client(pr_dev.server.url)
    try:
        opened = tick(defs, "pull_requests", instance, None)
        (request,) = opened.run_requests  # the PRs of earlier tests are closed
        assert request.tags[HEAD_TAG] == first_head and request.tags[PR_TAG] == str(number)
        run_id = client.submit_job_execution(
            PR_JOB, run_config={**request.run_config, **SLOW}, tags=request.tags
        )
        live = _wait_for_server(client, settings, run_id, phase)
        seen = {entry.pgid: entry for entry in live}

        # The push: a new commit on the PR branch, refs/pull/N/head moved, the forge's head.
        message, branch = "Tune the recipe", f"pr-{number}"
        pushed_head = forge.served.commit({path: text + "# tuned\n"}, message, branch=branch)
        assert forge.served.publish_pull(number, branch) == pushed_head
        forge.github.add_commit(pushed_head, message)
        forge.github.pull(number).head_sha = pushed_head
        pushed = tick(defs, "pull_requests", instance, opened.cursor)
        (again,) = pushed.run_requests
        assert again.tags[HEAD_TAG] == pushed_head and again.tags[PR_TAG] == str(number)

        status = _wait_for_status(client, run_id)
        record = instance.get_run_record_by_id(run_id)
    finally:
        forge.github.pull(number).state = "closed"  # out of the next test's ticks
        instance.dispose()
    assert status == dg.DagsterRunStatus.CANCELED, (status, record)

    # Nothing of the cancelled run may outlive it: poll, since a stopped group's members
    # may still be dying when the run's status is written.
    deadline = time.monotonic() + GONE_DEADLINE_S
    while left := _left_behind(settings, run_id, seen):
        assert time.monotonic() < deadline, f"left running after the cancel: {left}"
        time.sleep(POLL_S)  # polling the process table, under a deadline
    # The sweep was cut, not finished: its record says so for every job, the canary
    # included (fail-fast: the canary first, and it never ended good).
    swept = load_run(ArtifactStore(settings.artifacts_dir).root, run_id)
    assert swept is not None, f"no run record for {run_id}"
    assert {outcome.status for outcome in swept.outcomes} == {"cancelled"}, swept.outcomes
    assert swept.interrupted
    # Its report is kept (not posted: a superseded run's report is noise on the PR).
    report = report_dir(settings, number) / f"{run_id}.md"
    assert "cancelled" in report.read_text()
    if phase == "measuring":  # the server was up and its point cut (not one still starting)
        assert swept.server_launches == 1, swept
