"""The content-addressed artifact store: write-once blobs, attempts that never overwrite."""

from __future__ import annotations

import json

import pytest

from inferx_pipeline.errors import StoreError
from inferx_pipeline.launch.spec import ClientSettings, GpuRequest, ServerSpec
from inferx_pipeline.sweep.artifacts import ArtifactStore, AttemptManifest, redacted_spec_json


def _manifest(attempt: int) -> AttemptManifest:
    return AttemptManifest(
        job_id="r/s/l/c4", fingerprint="f" * 64, conc=4, sku="h200", recipe_id="r",
        run_id="run", attempt=attempt, status="ok", identity="i", artifacts={},
        started_at=1.0, finished_at=2.0,
    )  # fmt: skip


def test_blobs_are_addressed_by_content(store: ArtifactStore) -> None:
    sha = store.put(b"hello")
    assert store.put(b"hello") == sha
    assert store.read(sha) == b"hello"
    assert store.path(sha).parent.name == sha[:2]


def test_a_damaged_blob_is_rewritten_by_the_next_put_of_its_bytes(store: ArtifactStore) -> None:
    sha = store.put(b"hello")
    store.path(sha).write_bytes(b"hel")
    with pytest.raises(StoreError, match="is corrupt"):
        store.read(sha)
    assert store.put(b"hello") == sha
    assert store.read(sha) == b"hello"


def test_attempts_are_numbered_and_never_overwritten(store: ArtifactStore) -> None:
    first = store.begin_attempt("f" * 64, 4)
    second = store.begin_attempt("f" * 64, 4)
    assert (first, second) == (1, 2)
    store.record(_manifest(first))
    with pytest.raises(StoreError, match="attempt already recorded"):
        store.record(_manifest(first))
    store.record(_manifest(second))
    assert [m.attempt for m in store.attempts("f" * 64, 4)] == [1, 2]
    assert store.begin_attempt("f" * 64, 4) == 3


def test_spec_artifact_redacts_secrets() -> None:
    spec = ServerSpec(
        name="s", fingerprint="f", image="img", argv=("serve",), env={"HF_TOKEN": "hf_secret"},
        secret_env=("HF_TOKEN",), gpus=GpuRequest(vendor="none", count=0), port=0,
        startup_timeout_s=1, client=ClientSettings(api="chat", model_name="m"),
    )  # fmt: skip
    text = redacted_spec_json(spec)
    assert "hf_secret" not in text
    assert json.loads(text)["env"] == {"HF_TOKEN": "<redacted>"}
