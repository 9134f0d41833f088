"""The accuracy gate: throughput rows of a configuration marked with its newest score,
whatever their acceptance mode; other configurations left alone."""

from __future__ import annotations

from typing import Any

import pandas as pd

from inferx_pipeline.evals.result import EvalResult
from inferx_pipeline.evals.scores import FilterScore
from inferx_pipeline.matrix.select import Selection
from inferx_pipeline.plan.build import MatrixRequest, build_matrix
from inferx_pipeline.results.eval_record import EvalRecord, eval_record
from inferx_pipeline.results.evals import read_evals, write_evals
from inferx_pipeline.results.gate import below_threshold, mark_rows
from inferx_pipeline.results.store import ResultStore
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.measure import job_metadata

DIGEST = "sha256:" + "c" * 64
# A throughput point as the sweep identifies it: MTP drafts accepted synthetically at the
# golden AL, its context sized to the 1k/1k workload.
SYNTHETIC: dict[str, Any] = {
    "recipe_id": "qwen3.827b-bf16-mi325x-vllm-mtp", "fingerprint": "s" * 64,
    "job_id": "qwen3.827b-bf16-mi325x-vllm-mtp/fixed-seq-len-1024x1024/tp2-mtp/c4",
    "model": "Qwen/Qwen3.8-27B", "model_family": "qwen3.827b", "precision": "bf16",
    "sku": "mi325x", "vendor": "amd", "framework": "vllm",
    "image": "rocm/vllm:v0.11.2", "image_digest": DIGEST, "engine_version": "0.11.2",
    "scenario": "fixed-seq-len",
    "isl": 1024, "osl": 1024, "tp": 2, "ep": 1, "pp": 1, "pcp": 1, "dp_attn": False,
    "kv_offload": "none", "spec_method": "mtp", "draft_tokens": 3,
    "acceptance_mode": "synthetic", "target_al": 2.6, "thinking": "on", "conc": 4,
}  # fmt: skip
# Agentic MTP at the golden AL; its eval jobs verify drafts for real.
AGENTIC_MTP = Selection(recipes=("minimaxm3-fp8-mi325x-vllm-agentic-mtp",))


def _eval_twin(passed: bool, at: float, **over: Any) -> dict[str, Any]:
    """The stored eval row of the synthetic point's eval job: real verification, its own
    fingerprint, the eval protocol's context, scored by the sweep's code path."""
    meta = {
        **SYNTHETIC, "fingerprint": "e" * 64, "server_fingerprint": "t" * 64,
        "job_id": SYNTHETIC["job_id"] + "/eval", "acceptance_mode": "real", "conc": 32,
        "isl": 8192, "run_id": "r1", "attempt": 1, "simulated": True,
        "artifact:eval-samples.jsonl": "b" * 64, **over,
    }  # fmt: skip
    del meta["target_al"]
    score = 0.95 if passed else 0.5
    doc = EvalResult(
        task="gsm8k", lm_eval_task="gsm8k", dataset="host",
        filters=(FilterScore(filter="strict-match", exact_match=score, stderr=0.01),),
        n_original=1319, n_effective=1319, threshold=0.9, threshold_source="evals.yaml",
        passed=passed, lm_eval_version="0.4.13", finished_at=at,
        metadata={k: v for k, v in meta.items() if v is not None},
    )  # fmt: skip
    return eval_record(doc, f"{int(at):064x}").model_dump()


def _rows(*variants: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame([SYNTHETIC | variant for variant in variants])


def test_a_synthetic_point_is_marked_by_its_real_verification_twin_and_no_other() -> None:
    rows = _rows(
        {"conc": 4},
        {"conc": 64, "isl": 8192},  # another workload on the same configuration
        {"acceptance_mode": "real", "target_al": None},  # the real-acceptance arm
        {"model": "Qwen/Qwen3.5-32B"},
        {"precision": "fp8"},
        {"tp": 4},
        {"draft_tokens": 1},
        {"image_digest": "sha256:" + "f" * 64},  # another build of the image
    )
    rows["fingerprint"] = pd.Categorical([str(i) * 64 for i in range(len(rows))])
    evals = pd.DataFrame([_eval_twin(True, 1), _eval_twin(False, 2)])  # the newest wins
    marked = mark_rows(rows, evals)
    assert list(marked["eval_below"]) == [True, True, True] + [False] * 5
    assert list(marked["eval_score"][:3]) == [0.5] * 3 and marked["eval_score"][3:].isna().all()
    assert list(marked["conc"]) == list(rows["conc"])  # the same rows, in order
    assert isinstance(marked["fingerprint"].dtype, pd.CategoricalDtype)


def test_the_link_survives_the_store_and_reads_as_a_failing_configuration(
    store: ResultStore,
) -> None:
    twin = _eval_twin(False, 1)
    write_evals(store, [EvalRecord(**twin)])
    evals = read_evals(store)
    assert evals["config_id"].tolist() == [twin["config_id"]]
    assert below_threshold(evals)["job_id"].tolist() == [twin["job_id"]]
    assert mark_rows(_rows({}), evals)["eval_below"].tolist() == [True]


def test_a_score_stored_before_config_ids_marks_its_server_fingerprint() -> None:
    legacy = _eval_twin(False, 1) | {"config_id": None, "server_fingerprint": "s" * 64}
    rows = _rows({}, {"fingerprint": "o" * 64, "tp": 8})
    marked = mark_rows(rows, pd.DataFrame([legacy]))
    assert marked["eval_below"].tolist() == [True, False]


def test_scores_of_unmarked_rows_are_null_and_never_drop_a_row() -> None:
    rows = _rows({}, {"tp": 4})
    evals = pd.DataFrame([_eval_twin(True, 1)])
    marked = mark_rows(rows, evals)
    assert len(marked) == 2 and marked["eval_below"].tolist() == [False, False]
    assert marked["eval_score"].tolist()[0] == 0.95 and pd.isna(marked["eval_score"][1])


def test_the_matrix_eval_twin_of_a_synthetic_point_shares_its_configuration() -> None:
    points, evals = (
        build_matrix(MatrixRequest(paths=(), selection=AGENTIC_MTP, evals=mode), Settings())
        for mode in ("none", "all")
    )
    [twin] = [job for job in evals if job.job_id == points[0].job_id + "/eval"]
    assert points[0].spec.acceptance == "synthetic" and twin.spec.acceptance == "real"
    assert twin.fingerprint != points[0].fingerprint
    meta = job_metadata(twin, vendor="amd", image_digest=DIGEST, run_id="r", attempt=1,
                        simulated=True)  # fmt: skip
    rows = pd.DataFrame(
        [
            job_metadata(job, vendor="amd", image_digest=DIGEST, run_id="r", attempt=1,
                         simulated=True)
            for job in points
        ]
    )  # fmt: skip
    marked = mark_rows(rows, pd.DataFrame([_eval_twin(False, 1, **meta)]))
    same = [job.label == twin.label for job in points]
    assert marked["eval_below"].tolist() == same and 0 < sum(same) < len(points)
