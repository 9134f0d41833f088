"""One pull request's unofficial run: labels, the jobs its diff changes, the pre-GPU gate,
the canary, the sweep, its rows, and a report kept on disk and posted on the PR.

::

    setup = PrSetup(forge=forge, repo=watched, settings=settings, launcher=LauncherChoice(),
                    database_url=url, options=SweepOptions(), post=True)
    outcome = run_pull_request(12, setup)     # PrRunResult: state, counts, report path

In order, each step able to end the run with a report and nothing launched: the labels
(no sweep label, ``[skip-sweep]`` in the head commit, two primary labels), the PR's head
fetched as git exposes it (``refs/pull/<n>/head``), the jobs its diff changes (recipes,
``extends`` fragments, golden curves; an InferenceX tree's added changelog entries), the
gate at the head (every finding on a file the PR changed or a recipe it affects). Then
the canary and the rest are swept in one run whose points carry the PR and head
(``PullRef``), the rows are stored (never in the official view), the run is compared
with its baseline and the Markdown report is written under
``STATE/pr-reports/<n>/<run id>.md`` and posted when the forge has a token.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import Field

from inferx_pipeline.atomic import write_atomic
from inferx_pipeline.bench.validity import load_rules
from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.errors import ForgeError, PullRequestError, RecipeError
from inferx_pipeline.forge.base import Forge
from inferx_pipeline.gitrepo import WatchedRepo, commit_tree
from inferx_pipeline.golden import load_golden
from inferx_pipeline.leaderboard.build import build_site_from_store
from inferx_pipeline.leaderboard.compare import at_image, compare_columns, compare_run
from inferx_pipeline.leaderboard.config import load_leaderboard_config
from inferx_pipeline.leaderboard.pr_report import RunSummary, markdown_report
from inferx_pipeline.leaderboard.source import SHOWN
from inferx_pipeline.leaderboard.unofficial import run_dir
from inferx_pipeline.matrix.eval_catalog import cached_eval_catalog
from inferx_pipeline.matrix.runners import cached_runners
from inferx_pipeline.pipeline import ingest_report
from inferx_pipeline.plan.crosscheck import validate_recipes
from inferx_pipeline.prs.baseline import BaselineRef, baseline_ref
from inferx_pipeline.prs.labels import load_label_rules, pr_mode
from inferx_pipeline.prs.plan import PrPlan, pr_plan
from inferx_pipeline.prs.scope import pr_scope
from inferx_pipeline.recipes.policy.data import cached_policy
from inferx_pipeline.results.filters import ResultFilter
from inferx_pipeline.results.importers import ImportContext
from inferx_pipeline.results.pull_runs import (
    PullRun,
    newest_run_of,
    read_pull_runs,
    record_pull_run,
)
from inferx_pipeline.results.store import ResultStore
from inferx_pipeline.settings import Settings
from inferx_pipeline.strict import FrozenModel
from inferx_pipeline.sweep.artifacts import ArtifactStore
from inferx_pipeline.sweep.evaluate import eval_setup
from inferx_pipeline.sweep.launchers import LauncherChoice
from inferx_pipeline.sweep.report import PullRef, SweepOptions, SweepProgress, SweepReport
from inferx_pipeline.sweep.runner import VALIDITY_FILE, run_sweep
from inferx_pipeline.sweep.status import load_policy

State = Literal[
    "skipped", "unlabeled", "refused", "gate-failed", "nothing", "swept", "cancelled"
]  # fmt: skip
# Why a run is stopped from outside, most often: a newer run of its PR superseded it.
CANCELLED = (
    "cancelled before every job ended (a new push or label change supersedes a PR's run; "
    "so do Ctrl-C and a stop from the UI); the report is kept, not posted"
)


@dataclass(frozen=True)
class PrSetup:
    """Where a PR run reads, measures and writes."""

    forge: Forge
    repo: WatchedRepo
    settings: Settings
    launcher: LauncherChoice
    database_url: str
    options: SweepOptions
    post: bool = False


class PrRunResult(FrozenModel):
    """How one PR run ended, and where its report is."""

    number: int
    head_sha: str
    run_id: str | None = Field(description="The sweep's run id; None when nothing ran.")
    state: State
    message: str
    label: str | None = None
    canary: str | None = Field(default=None, description="The canary job id, if any.")
    counts: dict[str, int] = Field(default_factory=dict, description="Jobs per status.")
    launches: int = 0
    report: Path | None = None
    comment_url: str | None = None


def run_pull_request(
    number: int,
    setup: PrSetup,
    *,
    head_sha: str | None = None,
    run_id: str | None = None,
    cancel: threading.Event | None = None,
    progress: SweepProgress | None = None,
) -> PrRunResult:
    """Sweep pull request ``number`` at ``head_sha`` (default: its head now) as an
    unofficial run; see the module docstring. Raises ForgeError or GitRepoError when the
    forge or the repository cannot be read; everything about the PR itself is a state."""
    pull = setup.forge.pull(number)
    head = head_sha or pull.head_sha
    rules = load_label_rules(setup.settings.catalog_dir)
    result = PrRunResult(number=number, head_sha=head, run_id=None, state="refused", message="")
    try:
        mode = pr_mode(pull.labels, setup.forge.commit(head).message, rules)
    except PullRequestError as err:
        return _finish(setup, _ended(result, "refused", str(err)))
    if mode.kind != "run":
        return _finish(setup, _ended(result, "skipped" if mode.kind == "skip" else "unlabeled",
                                     mode.reason))  # fmt: skip
    result = result.model_copy(update={"label": mode.label})
    setup.repo.fetch_ref(setup.forge.pull_ref(number), f"refs/inferx/pull/{number}/head")
    base = setup.repo.fetch()
    tree = setup.repo.export_tree(head, commit_tree(setup.settings.state, head))
    changed = setup.repo.changed_between(base, head)
    findings = _gate(tree, changed, setup.settings)
    try:
        scope = pr_scope(
            tree,
            changed,
            changelog_base=setup.repo.file_at(base, "perf-changelog.yaml"),
            changelog_head=setup.repo.file_at(head, "perf-changelog.yaml"),
            catalog_dir=setup.settings.catalog_dir,
            evals=mode.matrix_evals,
        )
    except PullRequestError as err:
        return _finish(setup, _ended(result, "refused", str(err)))
    except RecipeError as err:  # an affected recipe the gate's file filter did not name
        findings = findings or str(err).splitlines()
    if findings:
        ended = _ended(result, "gate-failed", f"the pre-GPU gate found {len(findings)} problems")
        return _finish(setup, ended, findings=findings)
    plan = pr_plan(scope.jobs, mode)
    if not plan.jobs:
        return _finish(setup, _ended(result, "nothing", "the PR changes no recipe, fragment, "
                                     "curve or changelog entry that runs a job"))  # fmt: skip
    recipe, image, note = _baseline(baseline_ref(pull.body), setup.database_url)
    pull_run = PullRun(
        run_id=run_id or uuid.uuid4().hex,
        pr_number=number,
        head_sha=head,
        label=mode.label,
        baseline_recipe=recipe,
        baseline_image=image,
        recorded_at=datetime.now(UTC),
    )
    report = _sweep(plan, tree, pull_run, setup, cancel, progress)
    state: State = "cancelled" if report.interrupted else "swept"
    message = CANCELLED if report.interrupted else plan.describe()
    swept = _ended(result, state, message).model_copy(
        update={
            "run_id": report.run_id,
            "canary": plan.canary.job_id if plan.canary else None,
            "counts": report.counts(),
            "launches": report.server_launches,
        }
    )
    return _finish(setup, swept, report=report, baseline=pull_run, note=note)


def _baseline(ref: BaselineRef | None, url: str) -> tuple[str | None, str | None, str | None]:
    """``(recipe, image, note)`` of the baseline ``ref`` names: a PR's reference resolved
    to the recipe its newest run here swept; the note says what was named and found."""
    if ref is None:
        return None, None, None
    named = f"named in the PR: `{ref.describe()}`"
    if ref.pr is None:
        return ref.recipe, ref.image, named
    store = ResultStore(url)
    try:
        run = newest_run_of(read_pull_runs(store), ref.pr)
        found = ResultFilter(pull_requests="include", run_ids=(run.run_id,)) if run else None
        recipes = sorted(set(store.read_frame(found, ("recipe_id",))["recipe_id"])) if found else []
    finally:
        store.close()
    if len(recipes) == 1:
        return recipes[0], ref.image, f"{named}, whose run swept `{recipes[0]}`"
    why = "has no run recorded here" if not recipes else f"swept {len(recipes)} recipes"
    return None, ref.image, f"{named}; PR #{ref.pr} {why}, so each point's own recipe is used"


def _ended(result: PrRunResult, state: State, message: str) -> PrRunResult:
    return result.model_copy(update={"state": state, "message": message})


def _gate(tree: Path, changed: list[str], settings: Settings) -> list[str]:
    """The pre-GPU findings at the head on the files the PR changed (a recipe, or a
    fragment or curve on its ``extends`` chain), as text relative to the tree."""
    at_head = Settings(root=tree, state_dir=settings.state)
    if not at_head.recipes_dir.is_dir():  # an InferenceX tree: its import judges it (scope)
        return []
    catalog_dir = _project_settings(tree, settings).catalog_dir
    result = validate_recipes(
        (at_head.recipes_dir,),
        catalog=cached_catalog(catalog_dir),
        golden=load_golden(at_head.golden_dir),
        policy=cached_policy(catalog_dir),
        runners=cached_runners(catalog_dir),
        evals=cached_eval_catalog(catalog_dir),
    )
    touched = {(tree / path).resolve() for path in changed}
    mine = []
    for finding in result.errors:
        files = {finding.recipe, finding.location.file if finding.location else None}
        files |= set(finding.chain)
        if any(f is not None and Path(f).resolve() in touched for f in files):
            mine.append(str(finding).replace(f"{tree}/", ""))
    return mine


def _sweep(
    plan: PrPlan,
    tree: Path,
    pull_run: PullRun,
    setup: PrSetup,
    cancel: threading.Event | None,
    progress: SweepProgress | None,
) -> SweepReport:
    """Sweep ``plan`` as run ``pull_run``, store its rows and the run, rebuild the site.

    The points are judged by the head tree's rules (sweep policy, validity), as the
    official run of the merged commit judges them (``defs.assets``): the same rules make
    the same reuse identities, so the merge promotes these points.
    """
    settings, run_id = setup.settings, pull_run.run_id
    rules_from = _project_settings(tree, settings)
    jobs = list(plan.jobs)
    options = setup.options.model_copy(update={"fail_fast": plan.fail_fast})
    skus = {job.sku for job in jobs}
    backend = setup.launcher.source(settings, run_id=run_id, skus=skus, environ=os.environ)
    store = ArtifactStore(settings.artifacts_dir)
    report = run_sweep(
        jobs,
        backend=backend,
        artifacts=store,
        policy=load_policy(rules_from.catalog_dir),
        options=options,
        progress=progress,
        cancel=cancel,
        run_id=run_id,
        validity=load_rules(rules_from.catalog_dir / VALIDITY_FILE),
        evals=eval_setup(settings) if any(job.run_eval for job in jobs) else None,
        pull=PullRef(number=pull_run.pr_number, head_sha=pull_run.head_sha),
        canary=plan.canary,
    )
    results = ResultStore(setup.database_url)
    try:
        context = ImportContext.from_catalog(cached_catalog(settings.catalog_dir))
        ingest_report(report, store, results, context)
        record_pull_run(results, pull_run)
    finally:
        results.close()
    # The report links to the run's pages: the site is rebuilt with them.
    build_site_from_store(setup.database_url, settings.site_dir, settings.catalog_dir)
    return report


def _project_settings(tree: Path, settings: Settings) -> Settings:
    """The head tree as a project when it is one (its own catalog), else the project's."""
    at_head = Settings(root=tree, state_dir=settings.state)
    return at_head if at_head.catalog_dir.is_dir() and at_head.recipes_dir.is_dir() else settings


def report_dir(settings: Settings, number: int) -> Path:
    """Where pull request ``number``'s reports are written, one ``<run id>.md`` per run."""
    return settings.state / "pr-reports" / str(number)


def _finish(
    setup: PrSetup,
    result: PrRunResult,
    *,
    findings: Sequence[str] = (),
    report: SweepReport | None = None,
    baseline: PullRun | None = None,
    note: str | None = None,
) -> PrRunResult:
    """Write the run's Markdown report, post it when asked; the result pointing at both.

    A report that cannot be posted stays on disk and the result says why: the run's
    outcome is never lost to the forge being down.
    """
    if report is not None or findings:
        markdown = _run_markdown(setup, result, findings, report, baseline, note)
    else:
        markdown = f"### inferx: PR #{result.number} @ {result.head_sha[:7]}: not swept\n\n"
        markdown += f"{result.state}: {result.message}\n"
    name = result.run_id or f"{result.state}-{result.head_sha[:12]}"
    path = report_dir(setup.settings, result.number) / f"{name}.md"
    write_atomic(path, markdown.encode())
    update: dict[str, object] = {"report": path}
    if setup.post and result.state != "cancelled":  # a superseded run's report is noise
        try:
            update["comment_url"] = setup.forge.comment(result.number, markdown).html_url
        except ForgeError as err:
            update["message"] = f"{result.message}; the report was not posted: {err}"
    return result.model_copy(update=update)


def _run_markdown(
    setup: PrSetup,
    result: PrRunResult,
    findings: Sequence[str],
    report: SweepReport | None,
    baseline: PullRun | None,
    note: str | None,
) -> str:
    """The report of a run that reached the gate: its findings, or its sweep compared with
    the official points of its baseline (``baseline``'s recipe, else each point's own, at
    its image, else the newest shown)."""
    summary = RunSummary(
        pr_number=result.number,
        head_sha=result.head_sha,
        run_id=result.run_id,
        label=result.label,
        canary=result.canary,
        canary_status=_canary_status(report, result.canary),
        job_counts=result.counts,
        performance_url=_page(setup.settings, result.run_id, "index.html"),
        accuracy_url=_page(setup.settings, result.run_id, "accuracy.html"),
        gate_findings=tuple(findings),
        stopped=result.message if result.state == "cancelled" else None,
        baseline_note=note,
    )
    if report is None:
        return markdown_report(None, summary)
    config = load_leaderboard_config(setup.settings.catalog_dir)
    stat, columns = config.default_stat, compare_columns(config.default_stat)
    store = ResultStore(setup.database_url)
    try:
        rows = store.read_frame(
            ResultFilter(pull_requests="only", run_ids=(report.run_id,)), columns
        )
        named = baseline.baseline_recipe if baseline else None
        recipes = (named,) if named else tuple(sorted(set(rows["recipe_id"])))
        official = store.read_frame(SHOWN.model_copy(update={"recipe_ids": recipes}), columns)
    finally:
        store.close()
    official = at_image(official, baseline.baseline_image if baseline else None)
    comparison = compare_run(rows, official, config.tier_set, stat, named)
    return markdown_report(comparison, summary)


def _canary_status(report: SweepReport | None, canary: str | None) -> str | None:
    if report is None or canary is None:
        return None
    return next((o.status for o in report.outcomes if o.job_id == canary), None)


def _page(settings: Settings, run_id: str | None, page: str) -> str | None:
    """The URL of run ``run_id``'s ``page`` on the site (INFERX_SITE_URL, else the file)."""
    if run_id is None:
        return None
    base = settings.site_url or settings.site_dir.absolute().as_uri()  # the link, not a build
    return f"{base.rstrip('/')}/unofficial/{run_dir(run_id)}/{page}"
