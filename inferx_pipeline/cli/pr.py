"""``inferx pr list|run|report``: the recipe repository's pull requests, swept as unofficial runs.

The forge is ``INFERX_FORGE_REPO`` (OWNER/NAME) at ``INFERX_FORGE_API``, its token in the
variable ``INFERX_FORGE_TOKEN_ENV`` names (default ``GITHUB_TOKEN``); the git repository
the PR heads are fetched from is ``INFERX_RECIPES_REPO``. ``inferx pr run`` exits 0 when
the PR was swept and every job ended ok or reused (or there was nothing to do: no sweep
label, ``[skip-sweep]``), 1 when the PR was refused, failed the gate or a job failed.
"""

from __future__ import annotations

import uuid

import click
from rich.console import Console

from inferx_pipeline.cli.launch_flags import launch_options, pop_launcher, pop_sweep_options
from inferx_pipeline.errors import PullRequestError
from inferx_pipeline.forge.github import GitHubForge
from inferx_pipeline.gitrepo import WatchedRepo
from inferx_pipeline.pr_run import PrSetup, report_dir, run_pull_request
from inferx_pipeline.prs.labels import load_label_rules, pr_mode
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.console import RichProgress
from inferx_pipeline.sweep.signals import terminate_as_interrupt

GOOD_STATES = frozenset({"swept", "skipped", "unlabeled", "nothing"})


@click.group()
def pr() -> None:
    """Pull requests: list what each would run, sweep one, print its report."""


def _forge(settings: Settings) -> GitHubForge:
    if settings.forge_repo is None:
        raise click.UsageError("no forge repository: set INFERX_FORGE_REPO=OWNER/NAME")
    return GitHubForge.from_url(
        settings.forge_repo, api_url=settings.forge_api, token_env=settings.forge_token_env
    )


@pr.command("list")
def list_() -> None:
    """Each open pull request: head, labels, and what its labels would run."""
    settings = Settings()
    rules = load_label_rules(settings.catalog_dir)
    forge = _forge(settings)
    for pull in forge.open_pulls():
        try:
            mode = pr_mode(pull.labels, forge.commit(pull.head_sha).message, rules)
            what = (
                " + ".join((mode.label, *mode.modifiers))
                if mode.kind == "run"
                else f"{mode.kind}: {mode.reason}"
            )
        except PullRequestError as err:
            what = f"refused: {err}"
        labels = ",".join(pull.labels) or "-"
        click.echo(f"#{pull.number}\t{pull.head_sha[:12]}\t{labels}\t{what}")


@pr.command("run")
@click.argument("number", type=click.IntRange(min=1))
@click.option("--head", "head_sha", default=None, help="Head commit to sweep [default: now].")
@click.option(
    "--post/--no-post",
    default=None,
    help="Post the report on the PR [default: when the forge token is set].",
)
@launch_options
def run(number: int, head_sha: str | None, post: bool | None, **flags: object) -> None:
    """Sweep pull request NUMBER's changed jobs as an unofficial run and write its report."""
    settings = Settings()
    if settings.recipes_repo is None:
        raise click.UsageError("no recipe repository: set INFERX_RECIPES_REPO (path or URL)")
    forge = _forge(settings)
    setup = PrSetup(
        forge=forge,
        repo=WatchedRepo(
            settings.recipes_repo, settings.recipes_branch, mirror_dir=settings.state / "git"
        ),
        settings=settings,
        launcher=pop_launcher(flags),
        database_url=settings.results_url,
        options=pop_sweep_options(flags),
        post=forge.has_token() if post is None else post,
    )
    console = Console(stderr=True)
    with terminate_as_interrupt(), RichProgress(console) as progress:
        outcome = run_pull_request(
            number, setup, head_sha=head_sha, run_id=uuid.uuid4().hex, progress=progress
        )
    click.echo(f"PR #{number} @ {outcome.head_sha[:12]}: {outcome.state}: {outcome.message}")
    if outcome.report is not None:
        click.echo(f"report: {outcome.report}")
    if outcome.comment_url:
        click.echo(f"posted: {outcome.comment_url}")
    failed = set(outcome.counts) - {"ok", "reused"}
    if outcome.state not in GOOD_STATES or failed:
        click.get_current_context().exit(130 if "cancelled" in failed else 1)


@pr.command("report")
@click.argument("number", type=click.IntRange(min=1))
@click.option("--run", "run_id", default=None, help="That run's report [default: the newest].")
def report(number: int, run_id: str | None) -> None:
    """Print pull request NUMBER's newest report (Markdown), or that of run RUN_ID."""
    folder = report_dir(Settings(), number)
    reports = sorted(folder.glob("*.md"), key=lambda path: path.stat().st_mtime)
    if run_id is not None:
        reports = [path for path in reports if path.stem == run_id]
    if not reports:
        raise click.ClickException(
            f"no report of PR #{number}{f' run {run_id}' if run_id else ''} in {folder}; "
            f"run `inferx pr run {number}` first"
        )
    click.echo(reports[-1].read_text(), nl=False)
