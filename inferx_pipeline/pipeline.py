"""Chains across layers: a sweep's artifacts -> the results DB -> the leaderboard site.

The sweep runner records each attempt's raw client JSON as a content-addressed blob
(``sweep.artifacts``); the results layer ingests RawResult files by path, taking the
job identity from their metadata. These functions hand one to the other and own no
logic of either::

    report = run_sweep(jobs, ...)
    ingest_report(report, artifacts, store, context)          # one sweep's results
    publish(artifacts, url, site_dir, catalog_dir)            # every attempt, then the site

Ingest is idempotent (an artifact already stored is skipped), so publishing the same
artifact directory twice adds no rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.leaderboard.build import SiteManifest, build_site_from_store
from inferx_pipeline.results.importers import ImportContext
from inferx_pipeline.results.ingest import ResultWriter, ingest
from inferx_pipeline.results.store import IngestReport, ResultStore
from inferx_pipeline.sweep.artifacts import RESULT, ArtifactStore, AttemptManifest
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
    """The RawResult blob of every recorded attempt in ``artifacts``, in manifest order.

    Raises StoreError when a manifest is unreadable.
    """
    paths = (_result_path(artifacts, manifest) for manifest in artifacts.all_attempts())
    return list(dict.fromkeys(path for path in paths if path is not None))


def ingest_report(
    report: SweepReport, artifacts: ArtifactStore, store: ResultWriter, context: ImportContext
) -> IngestReport:
    """Ingest the results of one sweep into ``store`` in one transaction (idempotent)."""
    return ingest(report_result_paths(report, artifacts), store, context, "inferx")


@dataclass(frozen=True)
class Published:
    """What ``publish`` did: the ingest and the site it wrote."""

    ingest: IngestReport
    site: SiteManifest

    @property
    def index(self) -> Path:
        """The site's overview page."""
        return Path(self.site.out_dir) / "index.html"


def publish(artifacts: ArtifactStore, url: str, site_dir: Path, catalog_dir: Path) -> Published:
    """Ingest every attempt recorded in ``artifacts`` into the store at ``url``, then build the
    leaderboard site into ``site_dir``.

    Idempotent: results already stored are skipped, the site is rebuilt from the DB.
    Malformed result files are quarantined (see ``Published.ingest.rejections``); raises
    StoreError when the database fails and LeaderboardError when ``site_dir`` is not a
    previous build.
    """
    report = ingest_artifacts(artifacts, url, catalog_dir)
    return Published(report, build_site_from_store(url, site_dir, catalog_dir))


def ingest_artifacts(artifacts: ArtifactStore, url: str, catalog_dir: Path) -> IngestReport:
    """Ingest every attempt recorded in ``artifacts`` into the store at ``url`` (idempotent).

    Results already stored are skipped; malformed result files are quarantined with a
    reason. Raises StoreError when the database fails (nothing of this call is written).
    """
    context = ImportContext.from_catalog(cached_catalog(catalog_dir))
    store = ResultStore(url)
    try:
        return ingest(stored_result_paths(artifacts), store, context, "inferx")
    finally:
        store.close()
