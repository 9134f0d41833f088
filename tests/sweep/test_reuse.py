"""Point identity for reuse: every component changes the key; the index finds good attempts."""

from __future__ import annotations

from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.sweep.artifacts import ArtifactStore, AttemptManifest
from inferx_pipeline.sweep.reuse import ReuseIndex, point_identity


def test_each_identity_component_changes_the_key(seed_jobs: list[BenchmarkJob]) -> None:
    job = seed_jobs[0]
    base = point_identity(job, image_digest="sha256:a", client="1.0", seed=0)
    variants = [
        point_identity(seed_jobs[1], image_digest="sha256:a", client="1.0", seed=0),
        point_identity(job, image_digest="sha256:b", client="1.0", seed=0),
        point_identity(job, image_digest="sha256:a", client="1.1", seed=0),
        point_identity(job, image_digest="sha256:a", client="1.0", seed=1),
    ]
    assert len({base.key, *(v.key for v in variants)}) == 5
    assert base.key == point_identity(job, image_digest="sha256:a", client="1.0", seed=0).key


def test_index_keeps_only_ok_attempts(store: ArtifactStore, seed_jobs: list[BenchmarkJob]) -> None:
    job = seed_jobs[0]
    identity = point_identity(job, image_digest="d", client="c", seed=0)
    for status in ("result-invalid", "ok"):
        attempt = store.begin_attempt(job.fingerprint, job.conc)
        store.record(
            AttemptManifest(
                job_id=job.job_id,
                fingerprint=job.fingerprint,
                conc=job.conc,
                sku=job.sku,
                recipe_id=job.recipe_id,
                run_id="r",
                attempt=attempt,
                status=status,
                identity=identity.key,
                artifacts={},
                started_at=0,
                finished_at=attempt,
            )
        )
    hit = ReuseIndex(store).lookup(identity)
    assert hit is not None and hit.attempt == 2
    other = point_identity(job, image_digest="other", client="c", seed=0)
    assert ReuseIndex(store).lookup(other) is None
