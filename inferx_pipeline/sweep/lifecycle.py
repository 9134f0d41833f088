"""One server group, start to stop: preflight, start, health, warmup, each concurrency, stop.

Points run in ascending concurrency on one server, then the group's eval jobs
(``evaluate``: lm-eval at the eval's concurrency, scored and stored as the attempt).
``/metrics`` is read before and after each point. The server is restarted only when it
died; the point it died in is retried once on a fresh server, and each try is its own
recorded attempt. A server that cannot start fails every remaining point of the group
with the same status (the next start would fail the same way), without stopping other
groups.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from inferx_pipeline.bench.result import MetadataValue
from inferx_pipeline.errors import EvalError, InferxError
from inferx_pipeline.launch.base import ServerHandle, http_ok
from inferx_pipeline.launch.preflight import ImageFacts
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.sweep.artifacts import ArtifactStore
from inferx_pipeline.sweep.backends import SweepBackend
from inferx_pipeline.sweep.evaluate import EvalSetup, check_server, score_point
from inferx_pipeline.sweep.groups import ServerGroup
from inferx_pipeline.sweep.measure import bench_config, job_metadata, measure, served_version
from inferx_pipeline.sweep.recording import AttemptKey, Evidence, outcome_of, record_attempt
from inferx_pipeline.sweep.report import JobOutcome, PullRef, SweepOptions, SweepProgress
from inferx_pipeline.sweep.reuse import (
    PointIdentity,
    ReuseIndex,
    client_version,
    point_identity,
)
from inferx_pipeline.sweep.server import GroupServer
from inferx_pipeline.sweep.status import Failure, SweepPolicy, failure_from_error, judge

DEAD_POINT_RETRIES = 1
# A server ended by these is not restarted: the next allocation would hit the same time
# limit, and a cancelled one was stopped by a person.
NOT_RESTARTED: frozenset[str] = frozenset({"time-limit", "cancelled"})
EXIT_SETTLE_S = 3.0
EXIT_POLL_S = 0.05


@dataclass
class GroupContext:
    """Everything a group needs from its sweep (shared by all groups of one run)."""

    store: ArtifactStore
    reuse: ReuseIndex
    policy: SweepPolicy
    options: SweepOptions
    progress: SweepProgress
    cancel: threading.Event
    run_id: str
    policy_version: str
    min_duration_s: float
    evals: EvalSetup | None = None
    pull: PullRef | None = None
    launches: int = 0
    cancel_reason: str = "sweep cancelled"
    interrupted: bool = False  # a signal cut a point (SweepReport.interrupted)

    def key(self, job: BenchmarkJob, attempt: int, identity: str | None) -> AttemptKey:
        """Attempt ``attempt`` of ``job`` in this run (a PR run's attempts carry its number)."""
        return AttemptKey(
            job=job,
            attempt=attempt,
            run_id=self.run_id,
            identity=identity,
            pr_number=self.pull.number if self.pull else None,
        )

    def identity(self, job: BenchmarkJob, image_digest: str) -> PointIdentity:
        """The reuse identity of ``job`` measured in this sweep on ``image_digest``."""
        return point_identity(
            job,
            image_digest=image_digest,
            client=client_version(),
            options=self.options,
            policy=self.policy_version,
        )


@dataclass(frozen=True)
class GroupTarget:
    """A group's server spec, the backend serving it, and the facts its points are recorded with."""

    group: ServerGroup
    spec: ServerSpec
    backend: SweepBackend
    vendor: str
    image_digest: str | None


def _exit_after(handle: ServerHandle, failed: int) -> int | None:
    """The server's exit status after a point, None while it lives.

    A server dying mid-point first breaks streams and exits moments later: after failed
    requests, unless health still answers 2xx, give it ``EXIT_SETTLE_S`` to show an exit
    before calling it alive.
    """
    healthy = not failed or http_ok(handle.base_url + handle.spec.health_path)
    deadline = time.monotonic() + (0.0 if healthy else EXIT_SETTLE_S)
    while (status := handle.exit_status()) is None and time.monotonic() < deadline:
        time.sleep(EXIT_POLL_S)  # polling the process state, bounded by the deadline
    return status


def _target_al(job: BenchmarkJob) -> float | None:
    spec = job.spec
    synthetic = spec.acceptance == "synthetic" and not job.run_eval
    return spec.target_al if synthetic else None


class GroupRun:
    """Runs the pending points of one group; see the module docstring."""

    def __init__(self, target: GroupTarget, ctx: GroupContext) -> None:
        self.target = target
        self.ctx = ctx
        self.server = GroupServer(
            target.spec,
            target.backend.launcher,
            warmup_job=target.group.jobs[0],
            warmup_prompts=ctx.options.warmup_prompts,
            on_launch=self._launched,
        )
        self.facts: ImageFacts | None = None

    def _launched(self, handle: ServerHandle) -> None:
        self.ctx.launches += 1

    def run(self, pending: list[BenchmarkJob]) -> list[JobOutcome]:
        """Outcomes of ``pending`` (ascending conc), one per job, in order."""
        try:
            self.facts = self.target.backend.preflight(self.target.group.spec_job, self.target.spec)
        except InferxError as err:  # PreflightError, or an image the preflight cannot run
            failure = failure_from_error(err, "preflight")
            return [self._fail(job, failure) for job in pending]
        try:
            return self._points(pending)
        finally:
            self.server.stop()

    def _points(self, pending: list[BenchmarkJob]) -> list[JobOutcome]:
        outcomes: list[JobOutcome] = []
        for index, job in enumerate(pending):
            if self.ctx.cancel.is_set():
                outcomes += [self._cancelled(j) for j in pending[index:]]
                break
            self.ctx.progress.point_started(job)
            outcome, start_failure = self._eval(job) if job.run_eval else self._point(job)
            self.ctx.progress.point_finished(outcome)
            outcomes.append(outcome)
            if outcome.status == "cancelled":  # a measured point is cancelled only by a signal
                self.ctx.interrupted = True
                self.ctx.cancel_reason = "sweep interrupted"
            if outcome.status == "cancelled" or (self.ctx.options.fail_fast and not outcome.good):
                self.ctx.cancel.set()
            if start_failure is not None:
                outcomes += [self._fail(j, start_failure) for j in pending[index + 1 :]]
                break
        return outcomes

    def _point(self, job: BenchmarkJob) -> tuple[JobOutcome, Failure | None]:
        """The job's outcome, and the failure when its server could not be started."""
        attempts: list[int] = []
        while True:
            attempt = self.ctx.store.begin_attempt(job.fingerprint, job.conc)
            attempts.append(attempt)
            evidence = Evidence(spec=self.target.spec, started_at=time.time())
            try:
                handle = self.server.ensure()
            except InferxError as err:
                return self._start_failed(err, job, attempt, attempts, evidence)
            except BaseException:  # Ctrl-C or a cancelled run while the server starts
                self.ctx.store.abandon_attempt(job.fingerprint, job.conc, attempt)
                raise
            outcome, death = self._measure(job, handle, attempt, attempts, evidence)
            if death is not None and death.status in NOT_RESTARTED:
                return outcome, death
            if death is None or len(attempts) > DEAD_POINT_RETRIES:
                return outcome, None

    def _start_failed(
        self,
        err: InferxError,
        job: BenchmarkJob,
        attempt: int,
        attempts: list[int],
        evidence: Evidence,
    ) -> tuple[JobOutcome, Failure]:
        """The job's outcome when its server could not be started, and that failure."""
        failure = failure_from_error(
            err, self.server.phase, health_answered=self.server.health_answered
        )
        evidence.provenance = self.server.provenance()
        self.server.stop()
        return self._record_failure(job, attempt, attempts, evidence, failure), failure

    def _measure(
        self,
        job: BenchmarkJob,
        handle: ServerHandle,
        attempt: int,
        attempts: list[int],
        evidence: Evidence,
    ) -> tuple[JobOutcome, Failure | None]:
        """The point's outcome, and the failure when the server died during it."""
        digest = self._digest(handle)
        metadata = self._metadata(job, handle, attempt, digest)
        config = bench_config(
            job,
            self.target.spec,
            handle.base_url,
            self.ctx.options,
            metadata,
            self.ctx.min_duration_s,
        )
        measured = measure(config)
        evidence.before, evidence.after, evidence.result = (
            measured.before,
            measured.after,
            measured.result,
        )
        evidence.provenance = handle.provenance
        status = _exit_after(handle, measured.result.failed)
        if status is not None:
            failure = failure_from_error(handle.exited_error(status), "measure")
            self.server.stop()
            return self._record_failure(job, attempt, attempts, evidence, failure), failure
        verdict = judge(measured.result, target_al=_target_al(job), policy=self.ctx.policy)
        identity = self.ctx.identity(job, digest)
        key = self.ctx.key(job, attempt, identity.key)
        evidence.server_log = self.server.log_bytes()
        manifest = record_attempt(
            self.ctx.store, key, evidence, verdict.status, message=verdict.message
        )
        self.ctx.reuse.add(manifest)
        return outcome_of(job, manifest, tuple(attempts), result=evidence.result), None

    def _eval(self, job: BenchmarkJob) -> tuple[JobOutcome, Failure | None]:
        """The eval job's outcome (one attempt), and the failure when no server could start.

        A refused or failed eval fails that job only; a server that died during it is
        restarted for the next point, as after a throughput point.
        """
        attempt = self.ctx.store.begin_attempt(job.fingerprint, job.conc)
        evidence = Evidence(spec=self.target.spec, started_at=time.time())
        refused = self._eval_refusal(job)
        if refused is not None or self.ctx.evals is None:
            failure = refused or Failure(status="eval-failed", message="no eval setup")
            return self._record_failure(job, attempt, [attempt], evidence, failure), None
        try:
            handle = self.server.ensure()
        except InferxError as err:
            return self._start_failed(err, job, attempt, [attempt], evidence)
        digest = self._digest(handle)
        evidence.provenance = handle.provenance
        try:
            scored = score_point(
                job, handle, self.ctx.evals, self._metadata(job, handle, attempt, digest)
            )
        except EvalError as err:
            failure = Failure(status="eval-failed", message=str(err))
            if (status := handle.exit_status()) is not None:
                failure = failure_from_error(handle.exited_error(status), "measure")
                self.server.stop()
            return self._record_failure(job, attempt, [attempt], evidence, failure), None
        evidence.eval, evidence.server_log = scored, self.server.log_bytes()
        identity = self.ctx.identity(job, digest).key
        key = self.ctx.key(job, attempt, identity)
        manifest = record_attempt(self.ctx.store, key, evidence, "ok")
        self.ctx.reuse.add(manifest)
        return outcome_of(job, manifest, (attempt,), scored=scored.result), None

    def _eval_refusal(self, job: BenchmarkJob) -> Failure | None:
        """Why eval ``job`` cannot run on this group's server; None when it can."""
        if self.ctx.evals is None:
            message = f"{job.job_id}: an eval job, but this sweep has no lm-eval (its log says why)"
            return Failure(status="eval-failed", message=message)
        try:
            check_server(job, self.target.spec, self.ctx.evals)
        except EvalError as err:
            return Failure(status="eval-refused", message=str(err))
        return None

    def _metadata(
        self, job: BenchmarkJob, handle: ServerHandle, attempt: int, digest: str
    ) -> dict[str, MetadataValue]:
        """Identity and provenance of one attempt on ``handle`` (RawResult metadata keys)."""
        metadata: dict[str, MetadataValue] = {**handle.provenance}
        if self.ctx.pull is not None:
            metadata |= self.ctx.pull.metadata()
        return metadata | job_metadata(
            job,
            vendor=self.target.vendor,
            image_digest=digest,
            run_id=self.ctx.run_id,
            attempt=attempt,
            simulated=self.target.backend.simulated,
            # What the engine itself says first; the preflight's reading when it says nothing.
            engine_version=served_version(handle.base_url)
            or (self.facts.engine_version if self.facts else None),
        )

    def _digest(self, handle: ServerHandle) -> str:
        # A Docker handle knows the digest it actually ran (the image may have been pulled).
        ran = getattr(handle, "image_digest", None)
        return str(ran or self.target.image_digest or "unknown")

    def _record_failure(
        self,
        job: BenchmarkJob,
        attempt: int,
        attempts: list[int],
        evidence: Evidence,
        failure: Failure,
    ) -> JobOutcome:
        log = self.server.log_bytes()
        evidence.server_log = log if log is not None else "\n".join(failure.log_tail).encode()
        key = self.ctx.key(job, attempt, None)
        manifest = record_attempt(
            self.ctx.store, key, evidence, failure.status, message=failure.message, failure=failure
        )
        return outcome_of(job, manifest, tuple(attempts), result=evidence.result, failure=failure)

    def _cancelled(self, job: BenchmarkJob) -> JobOutcome:
        outcome = JobOutcome.of(job, "cancelled", f"{self.ctx.cancel_reason} before it started")
        self.ctx.progress.point_finished(outcome)
        return outcome

    def _fail(self, job: BenchmarkJob, failure: Failure) -> JobOutcome:
        """Record ``failure`` as one attempt of ``job`` without touching a server."""
        attempt = self.ctx.store.begin_attempt(job.fingerprint, job.conc)
        evidence = Evidence(spec=self.target.spec, started_at=time.time())
        outcome = self._record_failure(job, attempt, [attempt], evidence, failure)
        self.ctx.progress.point_finished(outcome)
        return outcome
