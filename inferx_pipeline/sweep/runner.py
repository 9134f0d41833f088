"""``run_sweep``: the one library call that turns selected jobs into measured, recorded points.

::

    report = run_sweep(jobs, backend=simulator_backend(catalog, log_dir),
                       artifacts=ArtifactStore(settings.artifacts_dir), policy=policy)

Jobs are grouped by server identity; each group's server starts once for all its
concurrencies (``lifecycle``), on the backend its SKU maps to (one backend, or a
runner-pool source: ``pooled``). Points whose identity already has a good result are
reported ``reused`` without starting anything, unless ``options.force``. One failed
job never stops the others unless ``options.fail_fast``; Ctrl-C or SIGTERM (or ``cancel``)
ends the sweep with the remaining jobs ``cancelled``, and the report is still returned.
Before a backend's first server, what dead runs left on it is stopped
(``SweepBackend.prepare``); what could not be is a note of the run, not its end. The run
record is written however the sweep ends, an unexpected error included (then re-raised).
The CLI (``inferx sweep``) and the Dagster sweep assets both call this.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Sequence

from inferx_pipeline.bench.result import RawResult
from inferx_pipeline.bench.validity import ValidityRules, load_rules
from inferx_pipeline.errors import InferxError, StoreError
from inferx_pipeline.evals.result import EvalResult
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.artifacts import (
    EVAL_RESULT,
    RESULT,
    ArtifactStore,
    AttemptManifest,
    Damaged,
)
from inferx_pipeline.sweep.backends import BackendSource, SweepBackend
from inferx_pipeline.sweep.evaluate import EvalSetup
from inferx_pipeline.sweep.groups import ServerGroup, group_jobs
from inferx_pipeline.sweep.lifecycle import GroupContext, GroupRun, GroupTarget
from inferx_pipeline.sweep.report import (
    JobOutcome,
    NullProgress,
    PullRef,
    SweepOptions,
    SweepProgress,
    SweepReport,
)
from inferx_pipeline.sweep.reuse import ReuseIndex, policy_version
from inferx_pipeline.sweep.runs import save_run
from inferx_pipeline.sweep.signals import terminate_as_interrupt
from inferx_pipeline.sweep.status import SweepPolicy
from inferx_pipeline.sweep.takeover import owned_elsewhere, take_over

VALIDITY_FILE = "bench-validity.yaml"

PointKey = tuple[str, int]


class _Collector:
    """Passes progress on and keeps every finished outcome (so Ctrl-C loses none); a
    canary that does not end good cancels the rest of the sweep."""

    def __init__(self, inner: SweepProgress, canary: BenchmarkJob | None = None) -> None:
        self.inner = inner
        self.outcomes: dict[PointKey, JobOutcome] = {}
        self.canary = (canary.fingerprint, canary.conc) if canary else None
        self.ctx: GroupContext | None = None

    def group_started(self, group: ServerGroup, index: int, total: int) -> None:
        self.inner.group_started(group, index, total)

    def point_started(self, job: BenchmarkJob) -> None:
        self.inner.point_started(job)

    def point_finished(self, outcome: JobOutcome) -> None:
        key = (outcome.fingerprint, outcome.conc)
        self.outcomes[key] = outcome
        self.inner.point_finished(outcome)
        if key == self.canary and not outcome.good and self.ctx is not None:
            self.ctx.cancel_reason = f"the canary {outcome.job_id} ended {outcome.status}"
            self.ctx.cancel.set()

    def group_finished(self, group: ServerGroup) -> None:
        self.inner.group_finished(group)


def run_sweep(
    jobs: Sequence[BenchmarkJob],
    *,
    backend: BackendSource,
    artifacts: ArtifactStore,
    policy: SweepPolicy,
    options: SweepOptions | None = None,
    progress: SweepProgress | None = None,
    cancel: threading.Event | None = None,
    run_id: str | None = None,
    validity: ValidityRules | None = None,
    evals: EvalSetup | None = None,
    pull: PullRef | None = None,
    canary: BenchmarkJob | None = None,
) -> SweepReport:
    """Measure ``jobs`` on ``backend``; one outcome per job, in the order given.

    ``validity`` is the bench client's validity rules (default: the project's
    ``catalog/bench-validity.yaml``, as the client reads it); with ``policy`` they make
    the policy version in each point's reuse identity, and each point lasts at least
    their ``min_duration_s``. ``evals`` scores the eval jobs
    (without it, each eval job ends ``eval-failed``). ``pull`` makes it the unofficial run
    of that pull request: its points carry the PR, and points another kind of run
    measured are taken over (``takeover.py``). ``canary`` (one of ``jobs``, put first by
    the caller) is measured first; unless it ends good, every other job is cancelled.
    Raises only MatrixError (the same point selected twice), CatalogError (unreadable
    validity rules) and StoreError (the run's record, ``runs/<run_id>.json``, cannot be
    written); every failure of a server
    or a measurement becomes that job's status, and a failed clean-up of dead runs'
    servers a note in ``SweepReport.notes``.
    """
    options = options or SweepOptions()
    rules = validity or load_rules(Settings().catalog_dir / VALIDITY_FILE)
    groups = group_jobs(jobs)
    collector = _Collector(progress or NullProgress(), canary)
    ctx = GroupContext(
        store=artifacts,
        reuse=ReuseIndex(artifacts),
        policy=policy,
        options=options,
        progress=collector,
        cancel=cancel or threading.Event(),
        run_id=run_id or uuid.uuid4().hex,
        policy_version=policy_version(policy, rules),
        min_duration_s=rules.min_duration_s,
        evals=evals,
        pull=pull,
    )
    collector.ctx = ctx
    started = time.time()
    prepared = _Prepared()
    failure: BaseException | None = None
    interrupted = False
    try:
        # Whoever holds SIGINT (Dagster's run worker included), SIGINT and SIGTERM end the
        # sweep as the module docstring says.
        with terminate_as_interrupt():
            for index, group in enumerate(groups):
                collector.group_started(group, index, len(groups))
                _run_group(group, backend, ctx, prepared)
                collector.group_finished(group)
    except KeyboardInterrupt:
        ctx.cancel.set()
        interrupted = True
    except BaseException as err:  # recorded below, then re-raised: never a run without one
        failure = err
    why = "sweep interrupted" if failure is None else f"sweep failed ({failure!r})"
    outcomes = tuple(
        collector.outcomes.get((job.fingerprint, job.conc))
        or JobOutcome.of(job, "cancelled", f"{why} before this job")
        for job in jobs
    )
    report = SweepReport(
        run_id=ctx.run_id,
        pull=pull,
        outcomes=outcomes,
        groups=len(groups),
        server_launches=ctx.launches,
        started_at=started,
        finished_at=time.time(),
        notes=tuple(prepared.notes),
        interrupted=interrupted or ctx.interrupted,
    )
    save_run(report, artifacts.root)
    if failure is not None:
        raise failure
    return report


class _Prepared:
    """The backends whose ``prepare`` ran, and what it could not do."""

    def __init__(self) -> None:
        self.done: set[int] = set()
        self.notes: list[str] = []

    def once(self, backend: SweepBackend) -> None:
        """Before a backend's first server: stop what dead runs left on it (Docker: their
        containers; Slurm: their jobs). A failure is noted; the sweep goes on."""
        if id(backend) in self.done:
            return
        self.done.add(id(backend))
        try:
            note = backend.prepare().note()
        except InferxError as err:
            note = f"stopping the servers of dead runs failed: {err}"
        if note is not None:
            self.notes.append(note)


def _run_group(
    group: ServerGroup, source: BackendSource, ctx: GroupContext, prepared: _Prepared
) -> None:
    if ctx.cancel.is_set():
        for job in group.jobs:
            ctx.progress.point_finished(JobOutcome.of(job, "cancelled", ctx.cancel_reason))
        return
    try:
        backend = source.for_sku(group.spec_job.sku)
        spec = backend.specs(group.spec_job)
        vendor = backend.vendor_of(group.spec_job.sku)
    except InferxError as err:  # no host, no adapter or wiring, unknown SKU: nothing can start
        for job in group.jobs:
            ctx.progress.point_finished(JobOutcome.of(job, "launch-failed", str(err)))
        if ctx.options.fail_fast:
            ctx.cancel.set()
        return
    prepared.once(backend)
    digest = backend.digests.digest(spec.image)
    pending = [job for job in group.jobs if not _reused(job, digest, ctx)]
    if pending:
        target = GroupTarget(
            group=group, spec=spec, backend=backend, vendor=vendor, image_digest=digest
        )
        GroupRun(target, ctx).run(pending)


def _reused(job: BenchmarkJob, digest: str | None, ctx: GroupContext) -> bool:
    """Report ``job`` as reused when a good result with its identity exists."""
    if ctx.options.force or digest is None:
        return False
    hit = ctx.reuse.lookup(ctx.identity(job, digest))
    if hit is None:
        return False
    try:
        result, scored = _stored_result(ctx.store, hit)
    except StoreError as err:  # a missing or corrupt artifact: quarantine it, measure again
        ctx.store.quarantine(
            Damaged(
                path=str(ctx.store.manifest_path(hit)),
                job_id=job.job_id,
                sha256=hit.artifacts.get(RESULT, ""),
                reason=str(err),
            )
        )
        return False
    message = f"reused attempt {hit.attempt} of run {hit.run_id}"
    if owned_elsewhere(hit, ctx.pull):
        hit = take_over(ctx.store, hit, ctx.run_id, ctx.pull)
        result, scored = _stored_result(ctx.store, hit)
        message = hit.message
    outcome = JobOutcome.of(job, "reused", message)
    outcome = outcome.model_copy(update={"manifest": hit, "result": result, "eval": scored})
    ctx.progress.point_finished(outcome)
    return True


def _stored_result(
    store: ArtifactStore, manifest: AttemptManifest
) -> tuple[RawResult | None, EvalResult | None]:
    """The attempt's result (an eval's: its score), every artifact verified first;
    StoreError when any is damaged."""
    if (damage := store.damage(manifest)) is not None:
        raise StoreError(damage)
    sha, scored = manifest.artifacts.get(RESULT), manifest.artifacts.get(EVAL_RESULT)
    result = RawResult.model_validate_json(store.read(sha)) if sha else None
    return result, EvalResult.model_validate_json(store.read(scored)) if scored else None
