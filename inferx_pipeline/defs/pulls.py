"""Pull requests in Dagster: the ``pr_sweep`` job and the ``pull_requests`` sensor.

A PR's sweep is its own op job, not a materialization of the sweep assets: its points
are unofficial (they never enter the leaderboard), so they must never become the latest
materialization of an official partition, and the UI's partition grid stays the
official record. The job's runs carry ``inferx/pr``, ``inferx/head_sha`` and
``inferx/label``, so the runs page filters them by PR, commit or label, and a PR run is
cancelled like any other run.

``pull_requests`` lists the open PRs of the forge repository each tick. A PR that
carries one of the sweep labels and whose head or labels changed since the last tick
gets a run (run key: PR, head, labels), and its active runs are cancelled first: a new
push or a label change supersedes them. A PR that was closed, or lost its labels, has
its active runs cancelled. Cursor: PR number -> head SHA and labels last seen.
"""

# No `from __future__ import annotations`: Dagster reads these annotations at run time.
import json

import dagster as dg
from pydantic import Field

from inferx_pipeline.defs.config import SweepConfig
from inferx_pipeline.defs.resources import (
    LauncherResource,
    ProjectResource,
    RecipeRepoResource,
    ResultsResource,
)
from inferx_pipeline.errors import ForgeError
from inferx_pipeline.forge.github import GitHubForge
from inferx_pipeline.forge.models import PullRequest
from inferx_pipeline.prs.labels import load_label_rules

PR_JOB = "pr_sweep"
PR_OP = "sweep_pull_request"
PR_TAG = "inferx/pr"
HEAD_TAG = "inferx/head_sha"
LABEL_TAG = "inferx/label"
ACTIVE = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]


class ForgeResource(dg.ConfigurableResource):  # type: ignore[type-arg]  # yields itself
    """The recipe repository's forge (GitHub's REST API) and its token.

    Give ``token`` as ``dg.EnvVar(...)``: run storage then records the variable's name,
    never the token.
    """

    repo: str | None = Field(
        default=None, description="OWNER/NAME of the recipe repository; none = no PR watched."
    )
    api_url: str = Field(default="https://api.github.com", description="REST API base URL.")
    token: str | None = Field(
        default=None, description="API token (as an EnvVar); none = read-only, no comments."
    )

    def client(self) -> GitHubForge | None:
        """The forge client; None when no repository is configured."""
        if self.repo is None:
            return None
        owner, _, name = self.repo.partition("/")
        environ = {"GITHUB_TOKEN": self.token} if self.token else {}
        return GitHubForge(self.api_url, owner, name, token_env="GITHUB_TOKEN", environ=environ)


class PrSweepConfig(SweepConfig):
    """One pull request's unofficial run: which PR and head, and the point size."""

    number: int = Field(ge=1, description="Pull request number.")
    head_sha: str = Field(description="The head commit to sweep (the sensor's request).")


@dg.op(
    name=PR_OP,
    description="Sweep a labeled pull request's changed jobs as an unofficial run: gate, "
    "canary, the rest; rows stored with the PR; report written and posted.",
)
def pr_sweep_op(
    context: dg.OpExecutionContext,
    config: PrSweepConfig,
    project: ProjectResource,
    forge: ForgeResource,
    recipes_repo: RecipeRepoResource,
    results: ResultsResource,
    launcher: LauncherResource,
) -> dg.Output[None]:
    from inferx_pipeline.pr_run import PrSetup, run_pull_request  # see defs LAZY (results store)

    settings = project.settings()
    client, watched = forge.client(), recipes_repo.watched(settings.state)
    if client is None or watched is None:
        raise dg.Failure(
            "a PR sweep needs the forge repository (INFERX_FORGE_REPO) and the recipe "
            "repository (INFERX_RECIPES_REPO)"
        )
    setup = PrSetup(
        forge=client,
        repo=watched,
        settings=settings,
        launcher=launcher.choice(),
        database_url=results.url(project),
        options=config.options(),
        post=forge.token is not None,
    )
    outcome = run_pull_request(
        config.number, setup, head_sha=config.head_sha, run_id=context.run_id
    )
    context.log.info(outcome.message)
    metadata = {
        "state": dg.MetadataValue.text(outcome.state),
        "label": dg.MetadataValue.text(outcome.label or ""),
        "canary": dg.MetadataValue.text(outcome.canary or ""),
        "jobs": dg.MetadataValue.json(outcome.counts),
        "server_launches": dg.MetadataValue.int(outcome.launches),
        "report": dg.MetadataValue.path(str(outcome.report or "")),
    }
    if outcome.state in ("refused", "gate-failed", "cancelled") or (
        outcome.state == "swept" and set(outcome.counts) - {"ok", "reused"}
    ):
        raise dg.Failure(outcome.message, metadata=metadata)
    return dg.Output(None, metadata=metadata)


@dg.job(name=PR_JOB, description=pr_sweep_op.description, tags={"inferx/kind": "pull-request"})
def pr_job() -> None:
    pr_sweep_op()


def _state(pull: PullRequest, ours: list[str]) -> str:
    return f"{pull.head_sha}:{','.join(ours)}"


def _cancel_active(instance: dg.DagsterInstance, number: int) -> list[str]:
    """Cancel pull request ``number``'s queued and running sweeps; their run ids."""
    runs = instance.get_runs(filters=dg.RunsFilter(tags={PR_TAG: str(number)}, statuses=ACTIVE))
    for run in runs:
        instance.run_coordinator.cancel_run(run.run_id)
    return [run.run_id for run in runs]


@dg.sensor(
    name="pull_requests",
    job=pr_job,
    minimum_interval_seconds=60,
    description="Sweeps each labeled pull request of the forge repository (INFERX_FORGE_REPO) "
    "as an unofficial run; a new push or label change cancels its active run and starts one.",
)
def pull_requests(
    context: dg.SensorEvaluationContext, project: ProjectResource, forge: ForgeResource
) -> dg.SensorResult | dg.SkipReason:
    client = forge.client()
    if client is None:
        return dg.SkipReason("no forge repository to watch (set INFERX_FORGE_REPO)")
    try:
        pulls = client.open_pulls()
    except ForgeError as err:
        return dg.SkipReason(
            f"cannot list the pull requests of {forge.repo}: {err} (INFERX_FORGE_REPO, "
            "INFERX_FORGE_API); tried again next tick"
        )
    rules = load_label_rules(project.settings().catalog_dir)
    seen: dict[str, str] = json.loads(context.cursor or "{}")
    cursor: dict[str, str] = {}
    requests, cancelled = [], []
    for pull in pulls:
        ours = sorted(label for label in pull.labels if label in rules.names)
        if not ours:
            continue
        state = cursor[str(pull.number)] = _state(pull, ours)
        if seen.get(str(pull.number)) == state:
            continue
        cancelled += _cancel_active(context.instance, pull.number)
        config = {"number": pull.number, "head_sha": pull.head_sha}
        tags = {PR_TAG: str(pull.number), HEAD_TAG: pull.head_sha, LABEL_TAG: ",".join(ours)}
        requests.append(
            dg.RunRequest(
                run_key=f"pr:{pull.number}:{state}",
                run_config={"ops": {PR_OP: {"config": config}}},
                tags=tags,
            )
        )
    for gone in set(seen) - set(cursor):  # closed, merged, or no sweep label any more
        cancelled += _cancel_active(context.instance, int(gone))
    if cancelled:
        context.log.info(f"cancelled superseded PR runs: {', '.join(cancelled)}")
    if not requests:
        return dg.SensorResult(
            cursor=json.dumps(cursor, sort_keys=True),
            skip_reason=f"no labeled pull request changed ({len(pulls)} open, "
            f"{len(cursor)} labeled)" + (f"; cancelled {len(cancelled)} runs" if cancelled else ""),
        )
    return dg.SensorResult(run_requests=requests, cursor=json.dumps(cursor, sort_keys=True))
