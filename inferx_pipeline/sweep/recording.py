"""Turn one attempt's evidence into stored artifacts, a manifest and a ``JobOutcome``."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from inferx_pipeline.bench.prometheus import MetricsSnapshot
from inferx_pipeline.bench.result import RawResult
from inferx_pipeline.evals.result import EvalResult
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.sweep.artifacts import (
    EVAL_HARNESS,
    EVAL_LOG,
    EVAL_RESULT,
    EVAL_SAMPLES,
    METRICS_AFTER,
    METRICS_BEFORE,
    RESULT,
    SERVER_LOG,
    SERVER_SPEC,
    ArtifactStore,
    AttemptManifest,
    redacted_spec_json,
)
from inferx_pipeline.sweep.evaluate import EvalEvidence
from inferx_pipeline.sweep.report import JobOutcome
from inferx_pipeline.sweep.status import Failure, JobStatus


@dataclass
class Evidence:
    """What one attempt left behind; every part is optional but the spec."""

    spec: ServerSpec
    started_at: float
    server_log: bytes | None = None
    before: MetricsSnapshot | None = None
    after: MetricsSnapshot | None = None
    result: RawResult | None = None
    eval: EvalEvidence | None = None
    # Where the server ran, as its launcher reports it (ServerHandle.provenance).
    provenance: dict[str, str] = field(default_factory=dict)


def _snapshot_json(snap: MetricsSnapshot) -> str:
    return json.dumps({"taken_at": snap.taken_at, "samples": snap.samples}, sort_keys=True)


def store_evidence(store: ArtifactStore, evidence: Evidence) -> dict[str, str]:
    """Write every part of ``evidence``; return artifact name -> sha256.

    The result's own metadata names the other artifacts' hashes, so the raw JSON
    (hashed last) pins all of them; an eval's document does the same for its files.
    """
    hashes = {SERVER_SPEC: store.put_text(redacted_spec_json(evidence.spec))}
    if evidence.server_log is not None:
        hashes[SERVER_LOG] = store.put(evidence.server_log)
    if evidence.before is not None:
        hashes[METRICS_BEFORE] = store.put_text(_snapshot_json(evidence.before))
    if evidence.after is not None:
        hashes[METRICS_AFTER] = store.put_text(_snapshot_json(evidence.after))
    if evidence.result is not None:
        metadata = {**evidence.result.metadata, **{f"artifact:{k}": v for k, v in hashes.items()}}
        evidence.result = evidence.result.model_copy(update={"metadata": metadata})
        hashes[RESULT] = store.put_text(evidence.result.to_json())
    if evidence.eval is not None:
        hashes |= _store_eval(store, evidence.eval, hashes)
    return hashes


def _store_eval(
    store: ArtifactStore, scored: EvalEvidence, hashes: dict[str, str]
) -> dict[str, str]:
    """The eval's files, then its document naming every artifact's hash (hashed last)."""
    own = {
        EVAL_SAMPLES: store.put(scored.samples),
        EVAL_HARNESS: store.put(scored.harness_results),
        EVAL_LOG: store.put(scored.log),
    }
    pinned = {f"artifact:{k}": v for k, v in (hashes | own).items()}
    scored.result = scored.result.model_copy(
        update={"metadata": {**scored.result.metadata, **pinned}}
    )
    own[EVAL_RESULT] = store.put_text(scored.result.model_dump_json(indent=1))
    return own


@dataclass(frozen=True)
class AttemptKey:
    """Which attempt of which job, in which run, with which reuse identity."""

    job: BenchmarkJob
    attempt: int
    run_id: str
    identity: str | None
    pr_number: int | None = None


def record_attempt(
    store: ArtifactStore,
    key: AttemptKey,
    evidence: Evidence,
    status: JobStatus,
    *,
    message: str = "",
    failure: Failure | None = None,
) -> AttemptManifest:
    """Store the evidence and write the attempt's manifest (never overwriting one).

    A measured result of an attempt the sweep did not accept (its server died as the
    requests finished, a policy check failed) is stored invalid with the sweep's verdict
    among its reasons, so that no reader of the result alone takes it for a good point.
    """
    job = key.job
    if evidence.result is not None and status != "ok" and evidence.result.valid:
        verdict = f"{status}: {message.splitlines()[0]}" if message else status
        reasons = [*evidence.result.invalid_reasons, verdict]
        evidence.result = evidence.result.model_copy(
            update={"valid": False, "invalid_reasons": reasons}
        )
    manifest = AttemptManifest(
        job_id=job.job_id,
        fingerprint=job.fingerprint,
        conc=job.conc,
        sku=job.sku,
        recipe_id=job.recipe_id,
        run_id=key.run_id,
        attempt=key.attempt,
        status=status,
        message=message,
        identity=key.identity if status == "ok" else None,
        artifacts=store_evidence(store, evidence),
        exit_code=failure.exit_code if failure else None,
        oom_killed=failure.oom_killed if failure else False,
        provenance=evidence.provenance,
        started_at=evidence.started_at,
        finished_at=time.time(),
        pr_number=key.pr_number,
    )
    return store.record(manifest)


def outcome_of(
    job: BenchmarkJob,
    manifest: AttemptManifest,
    attempts: tuple[int, ...],
    *,
    result: RawResult | None = None,
    failure: Failure | None = None,
    scored: EvalResult | None = None,
) -> JobOutcome:
    """The job's outcome after its final attempt ``manifest``."""
    outcome = JobOutcome.of(job, manifest.status, manifest.message)
    return outcome.model_copy(
        update={
            "attempts": attempts,
            "manifest": manifest,
            "result": result,
            "eval": scored,
            "exit_code": failure.exit_code if failure else None,
            "oom_killed": failure.oom_killed if failure else False,
            "log_tail": failure.log_tail if failure else (),
        }
    )
