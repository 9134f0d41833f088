"""Damaged artifacts never block: a torn manifest or blob quarantines only its own point.

The manifest of one point is cut to every length from 0 to its size: the store still
yields the other points, and publish (a property test over the lengths) builds the site
with their rows and quarantines the damaged point with its job id. A reused point whose
blob is truncated or missing is quarantined and measured again.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.cli import cli
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.pipeline import publish, stored_results
from inferx_pipeline.results.store import ResultStore
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.artifacts import METRICS_AFTER, RESULT, SERVER_SPEC, ArtifactStore
from inferx_pipeline.sweep.runner import run_sweep
from inferx_pipeline.sweep.status import load_policy
from tests.faults.conftest import POINTS
from tests.sweep.conftest import FAST, sim_backend


def _first_manifest(store: ArtifactStore) -> Path:
    return sorted((store.root / "attempts").glob("*/c*/*.json"))[0]


def test_a_manifest_cut_to_any_length_hides_only_its_own_point(swept: ArtifactStore) -> None:
    path = _first_manifest(swept)
    whole = path.read_bytes()
    job_id = swept.scan()[0][0].job_id
    for length in range(len(whole)):  # every proper prefix, 0 included
        path.write_bytes(whole[:length])
        paths, rejected = stored_results(swept)
        assert len(paths) == POINTS - 1, length
        assert [r.code for r in rejected] == ["damaged-manifest"], length
        named = rejected[0].job_id
        assert named in (None, job_id), (length, named)
    path.write_bytes(whole)
    assert stored_results(swept)[1] == []


@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(fraction=st.floats(min_value=0.0, max_value=1.0, exclude_max=True))
def test_publish_with_a_torn_manifest_builds_the_site_and_quarantines_that_job(
    swept: ArtifactStore, fraction: float
) -> None:
    path = _first_manifest(swept)
    whole = path.read_bytes()
    path.write_bytes(whole[: int(len(whole) * fraction)])
    try:
        out = Path(f"{swept.root}-{uuid.uuid4().hex[:8]}")  # examples share the fixture
        url = f"sqlite:///{out}/results.db"
        done = publish(swept, url, out / "site", Settings().catalog_dir)
        assert done.index.is_file()
        assert done.ingest.written == POINTS - 1
        assert [r.code for r in done.ingest.rejections] == ["damaged-manifest"]
        store = ResultStore(url)
        assert store.count() == POINTS - 1
        assert [q.code for q in store.quarantine()] == ["damaged-manifest"]
        store.close()
    finally:
        path.write_bytes(whole)


def _resweep(store: ArtifactStore, jobs: list[BenchmarkJob], logs: Path) -> list[str]:
    settings = Settings()
    report = run_sweep(
        jobs,
        backend=sim_backend(cached_catalog(settings.catalog_dir), logs),
        artifacts=store,
        policy=load_policy(settings.catalog_dir),
        options=FAST,
    )
    return [o.status for o in report.outcomes]


def test_a_reused_point_with_a_torn_or_missing_blob_is_measured_again(
    swept: ArtifactStore, few_jobs: list[BenchmarkJob], tmp_path: Path
) -> None:
    manifests = sorted(swept.scan()[0], key=lambda m: m.conc)
    torn, gone = (swept.path(m.artifacts[RESULT]) for m in manifests[:2])
    torn.write_bytes(torn.read_bytes()[:40])
    gone.unlink()
    assert _resweep(swept, few_jobs, tmp_path / "logs") == ["ok", "ok", "reused"]
    notes = swept.quarantined()
    assert sorted(n.job_id or "" for n in notes) == sorted(m.job_id for m in manifests[:2])
    assert any("corrupt" in n.reason for n in notes) and any("not in" in n.reason for n in notes)
    out = tmp_path / "pub"
    done = publish(swept, f"sqlite:///{out}/results.db", out / "site", Settings().catalog_dir)
    assert done.index.is_file()
    assert done.ingest.written == POINTS  # two re-measured, one intact
    assert sorted(r.job_id or "" for r in done.ingest.rejections) == sorted(
        m.job_id for m in manifests[:2]
    )


def test_results_shows_the_artifact_paths_of_a_published_row(
    swept: ArtifactStore, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path}/results.db"
    publish(swept, url, tmp_path / "site", Settings().catalog_dir)
    manifest = swept.scan()[0][0]
    args = ["results", "artifacts", manifest.job_id, "--database-url", url]
    got = CliRunner().invoke(cli, [*args, "--artifacts-dir", str(swept.root)])
    assert got.exit_code == 0, got.output
    shown = dict(line.strip().split("\t")[:2] for line in got.output.splitlines()[1:])
    assert set(shown) == set(manifest.artifacts)
    assert all(shown[name] == str(swept.path(sha)) for name, sha in manifest.artifacts.items())
    assert "not in this store" not in got.output
    # The leaderboard's rows link to the results they were read from, by hash.
    board = json.loads((tmp_path / "site" / "downloads" / "leaderboard.json").read_text())
    rows = board["rows"] if isinstance(board, dict) else board
    linked = {row[k] for row in rows for k in ("lo_artifact_sha256", "hi_artifact_sha256")}
    linked.discard(None)
    assert linked and linked <= {m.artifacts[RESULT] for m in swept.scan()[0]}
    args = ["results", "artifacts", sorted(linked)[0], "--database-url", url]
    got = CliRunner().invoke(cli, [*args, "--artifacts-dir", str(swept.root)])
    assert got.exit_code == 0 and "server.log" in got.output, got.output


def test_a_truncated_shared_blob_is_rewritten_by_the_next_sweep(
    swept: ArtifactStore, few_jobs: list[BenchmarkJob], tmp_path: Path
) -> None:
    shared = {m.artifacts[SERVER_SPEC] for m in swept.scan()[0]}
    assert len(shared) == 1  # one server: every point links the same spec blob
    blob = swept.path(shared.pop())
    whole = blob.read_bytes()
    blob.write_bytes(whole[:40])
    assert _resweep(swept, few_jobs, tmp_path / "logs") == ["ok"] * POINTS
    assert blob.read_bytes() == whole  # the put of the good bytes repaired it
    notes = swept.quarantined()
    assert len(notes) == POINTS
    assert _resweep(swept, few_jobs, tmp_path / "logs") == ["reused"] * POINTS
    assert swept.quarantined() == notes


def test_identical_torn_manifests_are_entries_naming_each_point(
    swept: ArtifactStore, tmp_path: Path
) -> None:
    first, second, third = sorted(swept.scan()[0], key=lambda m: m.conc)
    swept.manifest_path(first).write_bytes(b"")
    swept.manifest_path(second).write_bytes(b"")
    # A later attempt of the third point, torn: its earlier attempt names the job.
    swept.manifest_path(third).with_name("0002.json").write_bytes(b"")
    paths, rejected = stored_results(swept)
    assert paths == [swept.path(third.artifacts[RESULT])]
    named = sorted((r.reason.split(":")[0], r.job_id) for r in rejected)
    assert named == sorted(
        [
            (f"point {first.fingerprint[:12]}/c{first.conc} attempt 1 (job id unreadable)", None),
            (f"point {second.fingerprint[:12]}/c{second.conc} attempt 1 (job id unreadable)", None),
            (f"job {third.job_id} attempt 2", third.job_id),
        ]
    )
    out = tmp_path / "pub"
    done = publish(swept, f"sqlite:///{out}/results.db", out / "site", Settings().catalog_dir)
    assert len(done.ingest.rejections) == 3
    store = ResultStore(f"sqlite:///{out}/results.db")
    assert sorted(q.path for q in store.quarantine()) == sorted(
        str(p) for p in swept.root.glob("attempts/*/c*/*.json") if p.stat().st_size == 0
    )
    store.close()


def test_publish_quarantines_a_point_whose_metrics_blob_is_damaged(
    swept: ArtifactStore, tmp_path: Path
) -> None:
    first = min(swept.scan()[0], key=lambda m: m.conc)
    blob = swept.path(first.artifacts[METRICS_AFTER])
    blob.write_bytes(blob.read_bytes()[:10])
    url = f"sqlite:///{tmp_path}/results.db"
    done = publish(swept, url, tmp_path / "site", Settings().catalog_dir)
    assert done.ingest.written == POINTS - 1
    [rejected] = done.ingest.rejections
    assert (rejected.code, rejected.job_id) == ("damaged-artifact", first.job_id)
    assert f"{METRICS_AFTER}: artifact {blob} is corrupt" in rejected.reason
    store = ResultStore(url)
    assert [q.job_id for q in store.quarantine()] == [first.job_id]
    assert first.job_id not in set(store.read_frame()["job_id"])
    store.close()
