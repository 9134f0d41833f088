"""Chains across layers: a sweep's artifacts -> the results DB -> the leaderboard site.

The sweep runner records each attempt's raw client JSON as a content-addressed blob
(``sweep.artifacts``); the results layer ingests RawResult files by path, taking the
job identity from their metadata. These functions hand one to the other and own no
logic of either::

    report = run_sweep(jobs, ...)
    ingest_report(report, artifacts, store, context)          # one sweep's results
    publish(artifacts, url, site_dir, catalog_dir)            # every attempt, then the site

Eval points leave an ``eval.json`` (``EvalResult``) instead of a RawResult; ``publish``
stores those in the ``eval_results`` table (``ingest_evals``) before building the site.

Ingest is idempotent (an artifact already stored is skipped), so publishing the same
artifact directory twice adds no rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.errors import MalformedArtifactError, StoreError
from inferx_pipeline.evals.result import EvalResult
from inferx_pipeline.leaderboard.build import SiteManifest, build_site_from_store
from inferx_pipeline.locks import file_lock
from inferx_pipeline.results.eval_record import EvalRecord, eval_record
from inferx_pipeline.results.evals import write_evals
from inferx_pipeline.results.importers import ImportContext
from inferx_pipeline.results.ingest import ResultWriter, ingest, sha256_hex
from inferx_pipeline.results.store import IngestReport, Rejection, ResultStore
from inferx_pipeline.sweep.artifacts import (
    EVAL_RESULT,
    RESULT,
    ArtifactStore,
    AttemptManifest,
    Damaged,
)
from inferx_pipeline.sweep.report import SweepReport


def _result_path(artifacts: ArtifactStore, manifest: AttemptManifest) -> Path | None:
    sha = manifest.artifacts.get(RESULT)
    return artifacts.path(sha) if sha else None


def report_result_paths(report: SweepReport, artifacts: ArtifactStore) -> list[Path]:
    """The RawResult blob of each outcome of ``report`` that has one (ok, reused, invalid).

    Outcomes without a measurement (launch failures, cancellations) have no blob.
    """
    paths = (_result_path(artifacts, o.manifest) for o in report.outcomes if o.manifest)
    return [path for path in paths if path is not None]


def stored_result_paths(artifacts: ArtifactStore) -> list[Path]:
    """The RawResult blob of every readable attempt in ``artifacts``, in manifest order."""
    return stored_results(artifacts)[0]


def stored_results(artifacts: ArtifactStore) -> tuple[list[Path], list[Rejection]]:
    """The intact RawResult blobs of every attempt, and a rejection per damaged point.

    A torn manifest, or any artifact of a point (its result, log, metrics, spec) that
    is missing or does not match its hash, rejects that point with what names it (job
    id, else fingerprint and concurrency from the manifest's path; attempt) and the
    reason: the rule the sweep uses to measure a point again. Every other point is
    unaffected. The sweep's own quarantine notes (a reused point found damaged) join
    the rejections; one per damaged file and point.
    """
    manifests, damaged = artifacts.scan()
    rejections = [_damaged(note, "damaged-manifest") for note in damaged]
    rejections += [_damaged(note, "damaged-artifact") for note in artifacts.quarantined()]
    paths: dict[Path, None] = {}
    for manifest in manifests:
        sha = manifest.artifacts.get(RESULT)
        if sha is None:
            continue
        if (damage := artifacts.damage(manifest)) is not None:
            # Keyed like the sweep's note on the same point: one entry per point.
            note = Damaged(
                path=str(artifacts.manifest_path(manifest)),
                job_id=manifest.job_id,
                sha256=sha,
                reason=damage,
            )
            rejections.append(_damaged(note, "damaged-artifact"))
            continue
        paths[artifacts.path(sha)] = None
    unique = {(r.artifact_sha256, r.path): r for r in rejections}
    return list(paths), list(unique.values())


def _damaged(note: Damaged, code: str) -> Rejection:
    return Rejection(
        path=note.path,
        # A file gone entirely has no bytes to hash: its path keys the quarantine entry.
        artifact_sha256=note.sha256 or sha256_hex(f"missing:{note.path}".encode()),
        source="inferx",
        code=code,
        reason=f"{note.point}: {note.reason}; the point is measured again by the next sweep",
        job_id=note.job_id,
    )


def ingest_report(
    report: SweepReport, artifacts: ArtifactStore, store: ResultWriter, context: ImportContext
) -> IngestReport:
    """Ingest the results of one sweep into ``store`` in one transaction (idempotent)."""
    return ingest(report_result_paths(report, artifacts), store, context, "inferx")


@dataclass(frozen=True)
class Published:
    """What ``publish`` did: the ingest and the site it wrote."""

    ingest: IngestReport
    evals: IngestReport
    site: SiteManifest

    @property
    def index(self) -> Path:
        """The site's overview page."""
        return Path(self.site.out_dir) / "index.html"


def publish(artifacts: ArtifactStore, url: str, site_dir: Path, catalog_dir: Path) -> Published:
    """Ingest every attempt recorded in ``artifacts`` into the store at ``url``, then build the
    leaderboard site into ``site_dir``.

    Idempotent: results already stored are skipped, the site is rebuilt from the DB.
    Malformed result files and damaged attempts are quarantined (see
    ``Published.ingest.rejections``) and never stop the rest. Concurrent publishes of
    one site run one after the other (lock files beside ``site_dir``). Raises
    StoreError when the database fails and LeaderboardError when ``site_dir`` is not a
    previous build.
    """
    # One publisher per site at a time (ingest too: SQLite refuses racing writers); a
    # second waits here, then finds its work done. The site build takes its own lock.
    with file_lock(site_dir.with_name(site_dir.name + ".publish.lock")):
        report = ingest_artifacts(artifacts, url, catalog_dir)
        evals = ingest_evals(artifacts, url)
        return Published(report, evals, build_site_from_store(url, site_dir, catalog_dir))


def ingest_artifacts(artifacts: ArtifactStore, url: str, catalog_dir: Path) -> IngestReport:
    """Ingest every attempt recorded in ``artifacts`` into the store at ``url`` (idempotent).

    Results already stored are skipped; malformed result files are quarantined with a
    reason, and so are damaged attempts (``stored_results``). Raises StoreError when the
    database fails (nothing of this call is written).
    """
    context = ImportContext.from_catalog(cached_catalog(catalog_dir))
    paths, damaged = stored_results(artifacts)
    store = ResultStore(url)
    try:
        return ingest(paths, store, context, "inferx", damaged)
    finally:
        store.close()


def stored_evals(artifacts: ArtifactStore) -> tuple[list[EvalRecord], list[Rejection]]:
    """The row of every recorded eval point, and a rejection per unreadable document."""
    records: list[EvalRecord] = []
    rejections: list[Rejection] = []
    for manifest in artifacts.all_attempts():
        sha = manifest.artifacts.get(EVAL_RESULT)
        if sha is None:
            continue
        try:
            doc = EvalResult.model_validate_json(artifacts.read(sha))
            records.append(eval_record(doc, sha))
        except (StoreError, ValidationError, MalformedArtifactError) as err:
            reason = f"job {manifest.job_id}: {err}".splitlines()[0]
            rejections.append(
                Rejection(
                    path=str(artifacts.path(sha)),
                    artifact_sha256=sha,
                    source="inferx",
                    code="damaged-artifact",
                    reason=reason,
                    job_id=manifest.job_id,
                )
            )
    return records, rejections


def ingest_evals(artifacts: ArtifactStore, url: str) -> IngestReport:
    """Store every recorded eval score of ``artifacts`` at ``url`` (idempotent); unreadable
    eval documents are quarantined. StoreError when the database fails."""
    records, rejections = stored_evals(artifacts)
    store = ResultStore(url)
    try:
        quarantined = store.write([], rejections)
        written = write_evals(store, records)
    finally:
        store.close()
    return written.model_copy(update={"rejections": quarantined.rejections})
