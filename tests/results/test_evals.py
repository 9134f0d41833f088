"""Stored eval scores: a sweep's eval document -> one row with its provenance, written once."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from sqlalchemy import create_engine

from inferx_pipeline.errors import MalformedArtifactError
from inferx_pipeline.evals.result import EvalResult
from inferx_pipeline.evals.scores import FilterScore
from inferx_pipeline.results import migrations
from inferx_pipeline.results.configs import config_id
from inferx_pipeline.results.eval_record import eval_record
from inferx_pipeline.results.evals import read_evals, write_evals
from inferx_pipeline.results.record import PULL_COLUMNS
from inferx_pipeline.results.store import ResultStore
from inferx_pipeline.results.tables import EVALS

SHA = "a" * 64
SAMPLES = "b" * 64
META: dict[str, str | int | float | bool] = {
    "recipe_id": "dsr1-fp8-mi300x-sglang",
    "fingerprint": "f" * 64,
    "server_fingerprint": "e" * 64,
    "job_id": "dsr1-fp8-mi300x-sglang/fixed-seq-len-8192x1024/tp8/c64/eval",
    "model": "deepseek-ai/DeepSeek-R1-0528",
    "model_family": "dsr1",
    "precision": "fp8",
    "sku": "mi300x",
    "vendor": "amd",
    "framework": "sglang",
    "image": "lmsysorg/sglang:v0.5.9-rocm700-mi30x",
    "image_digest": "sha256:" + "c" * 64,
    "engine_version": "0.5.9",
    "scenario": "fixed-seq-len",
    "isl": 8192,
    "osl": 1024,
    "tp": 8,
    "ep": 1,
    "dp_attn": False,
    "spec_method": "none",
    "thinking": "on",
    "conc": 64,
    "run_id": "r1",
    "attempt": 1,
    "simulated": True,
    "artifact:eval-samples.jsonl": SAMPLES,
}


def _doc(*, drop: str = "") -> EvalResult:
    return EvalResult(
        task="gsm8k",
        lm_eval_task="gsm8k",
        dataset="host",
        filters=(
            FilterScore(filter="strict-match", exact_match=0.93, stderr=0.007),
            FilterScore(filter="flexible-extract", exact_match=0.95, stderr=0.006),
        ),
        n_original=1319,
        n_effective=1319,
        threshold=0.91,
        threshold_source="InferenceX thresholds.yaml",
        passed=True,
        lm_eval_version="0.4.13",
        finished_at=1_780_000_000.0,
        metadata={k: v for k, v in META.items() if k != drop},
    )


def test_a_score_is_stored_once_with_its_provenance(store: ResultStore) -> None:
    record = eval_record(_doc(), SHA)
    first = write_evals(store, [record, record])
    again = write_evals(store, [record])
    assert (first.written, first.skipped_existing) == (1, 1)
    assert (again.written, again.skipped_existing) == (0, 1)
    [row] = read_evals(store).to_dict("records")
    assert (row["exact_match"], row["exact_match_stderr"], row["n_effective"]) == (
        0.93,
        0.007,
        1319,
    )
    assert json.loads(row["scores"]) == {
        "strict-match": [0.93, 0.007],
        "flexible-extract": [0.95, 0.006],
    }
    assert (row["image_digest"], row["engine_version"], row["lm_eval_version"]) == (
        META["image_digest"], "0.5.9", "0.4.13",
    )  # fmt: skip
    assert (row["samples_sha256"], row["artifact_sha256"], row["passed"]) == (SAMPLES, SHA, True)
    assert json.loads(row["artifacts"]) == {"eval-samples.jsonl": SAMPLES}
    assert row["config_id"] == config_id(META)  # the configuration the gate marks
    assert row["source"] == "inferx"


def test_an_agentic_score_without_sequence_lengths_stores_them_as_null() -> None:
    # The sweep's metadata leaves nulls out: an agentic job has no ISL/OSL.
    meta = {k: v for k, v in META.items() if k not in ("isl", "osl")}
    agentic = _doc().model_copy(update={"metadata": meta | {"scenario": "agentic-coding"}})
    record = eval_record(agentic, SHA)
    assert (record.scenario, record.isl, record.osl) == ("agentic-coding", None, None)


def test_a_document_without_its_identity_is_rejected() -> None:
    with pytest.raises(MalformedArtifactError) as err:
        eval_record(_doc(drop="recipe_id"), SHA)  # a torn identity
    assert (err.value.code, str(err.value)) == (
        "missing-identity", "configuration lacks recipe_id",
    )  # fmt: skip
    with pytest.raises(MalformedArtifactError) as err:
        eval_record(_doc(drop="job_id"), SHA)
    assert err.value.code == "wrong-type" and "job_id" in str(err.value)


def test_a_score_stored_before_config_ids_reads_as_null(store_url: str) -> None:
    engine = create_engine(store_url)
    with engine.begin() as conn:
        migrations.upgrade(conn, "0004")
        old = eval_record(_doc(), SHA).model_dump(exclude={"config_id", "source", *PULL_COLUMNS})
        conn.execute(EVALS.insert(), [old])  # the row as revision 0004 stored it
    engine.dispose()
    store = ResultStore(store_url)
    rerun = _doc().model_copy(update={"metadata": {**META, "run_id": "r2"}})
    write_evals(store, [eval_record(rerun, "d" * 64)])
    frame = read_evals(store).set_index("artifact_sha256")
    assert pd.isna(frame.loc[SHA, "config_id"]) and frame.loc[SHA, "source"] == "inferx"
    assert frame.loc["d" * 64, "config_id"] == config_id(META)
    assert frame[list(PULL_COLUMNS)].isna().all().all()  # official, scored by their run
    store.close()


def test_a_pull_requests_score_carries_its_pr_and_head(store: ResultStore) -> None:
    marks = {"pr_number": 12, "head_sha": "ab" * 20}
    doc = _doc().model_copy(update={"metadata": {**META, **marks}})
    write_evals(store, [eval_record(doc, SHA)])
    row = read_evals(store).iloc[0]
    assert (row["pr_number"], row["head_sha"], row["measured_in"]) == (12, "ab" * 20, None)
