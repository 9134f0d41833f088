"""A point one run takes over, unchanged, from the run that measured it.

A pull request's unofficial run marks its points with the PR (``PullRef``); they never
enter the official leaderboard. When a run reuses a point (``reuse.py``: the same
identity was measured already) that another kind of run measured (a PR's point reused
by the official run after the merge, or an official point reused by a PR's run), it
takes the point over: an attempt of *this* run whose result is the same measurement,
with this run's id, attempt and PR marks, and ``measured_in`` naming the run that
measured it. So every run's rows are complete, and a merge promotes a PR's points to
official without measuring them again. Every other artifact (log, metrics, spec, eval
samples) is shared by hash.
"""

from __future__ import annotations

import time

from inferx_pipeline.bench.result import MetadataValue, RawResult
from inferx_pipeline.evals.result import EvalResult
from inferx_pipeline.sweep.artifacts import EVAL_RESULT, RESULT, ArtifactStore, AttemptManifest
from inferx_pipeline.sweep.report import PullRef

# Metadata keys that say whose run a point is; replaced as a whole on takeover.
RUN_MARKS = ("run_id", "attempt", "pr_number", "head_sha", "measured_in")


def owned_elsewhere(manifest: AttemptManifest, pull: PullRef | None) -> bool:
    """Whether ``manifest`` belongs to another kind of run than one of ``pull`` (None:
    official): an official point for a PR run, a PR's point for the official run or for
    another PR."""
    return manifest.pr_number != (pull.number if pull else None)


def take_over(
    store: ArtifactStore, hit: AttemptManifest, run_id: str, pull: PullRef | None
) -> AttemptManifest:
    """Record ``hit``'s point as the next attempt of run ``run_id`` (of ``pull``), measured
    in ``hit``'s run; the new manifest."""
    attempt = store.begin_attempt(hit.fingerprint, hit.conc)
    measured_in = hit.measured_in or hit.run_id
    marks: dict[str, MetadataValue] = {
        "run_id": run_id,
        "attempt": attempt,
        "measured_in": measured_in,
        **(pull.metadata() if pull else {}),
    }
    artifacts = dict(hit.artifacts)
    if sha := artifacts.get(RESULT):
        raw = RawResult.model_validate_json(store.read(sha))
        artifacts[RESULT] = store.put_text(
            raw.model_copy(update={"metadata": _remarked(raw.metadata, marks)}).to_json()
        )
    if sha := artifacts.get(EVAL_RESULT):
        scored = EvalResult.model_validate_json(store.read(sha))
        remarked = scored.model_copy(update={"metadata": _remarked(scored.metadata, marks)})
        artifacts[EVAL_RESULT] = store.put_text(remarked.model_dump_json(indent=1))
    now = time.time()
    owner = f"PR #{hit.pr_number}" if hit.pr_number else "the official run"
    manifest = hit.model_copy(
        update={
            "run_id": run_id,
            "attempt": attempt,
            "message": f"taken over unchanged from {owner} {hit.run_id} (attempt {hit.attempt})",
            "artifacts": artifacts,
            "pr_number": pull.number if pull else None,
            "measured_in": measured_in,
            "started_at": now,
            "finished_at": now,
        }
    )
    return store.record(manifest)


def _remarked(
    metadata: dict[str, MetadataValue], marks: dict[str, MetadataValue]
) -> dict[str, MetadataValue]:
    kept = {key: value for key, value in metadata.items() if key not in RUN_MARKS}
    return kept | marks
