"""Hand-made inputs for the results tests: a RawResult with round numbers, an identity, rows."""

from __future__ import annotations

import hashlib
from typing import Any

from inferx_pipeline.bench.result import ClientInfo, DatasetInfo, RawResult
from inferx_pipeline.results.normalize import normalize
from inferx_pipeline.results.record import JobIdentity, ResultRecord, RunContext

STARTED_AT = 1_767_225_600.0  # 2026-01-01T00:00:00Z

# 100 requests over 10 s, 1024 in / 512 out each: tok/s follow from these.
LATENCIES_MS: dict[str, dict[str, float]] = {
    "ttft": {"mean": 200.0, "median": 180.0, "p90": 300.0, "p99": 400.0},
    "tpot": {"mean": 20.0, "median": 25.0, "p90": 40.0, "p99": 50.0},
    "itl": {"mean": 19.0, "median": 18.0, "p90": 30.0, "p99": 45.0},
    "e2el": {"mean": 1500.0, "median": 1400.0, "p90": 2000.0, "p99": 2500.0},
}


def vllm_payload(**overrides: Any) -> dict[str, Any]:
    """A ``vllm bench serve --save-result`` dict with self-consistent numbers."""
    payload: dict[str, Any] = {
        "date": "20260101-000000",
        "backend": "vllm",
        "model_id": "deepseek-ai/DeepSeek-R1-0528",
        "tokenizer_id": "deepseek-ai/DeepSeek-R1-0528",
        "num_prompts": 100,
        "request_rate": "inf",
        "burstiness": 1.0,
        "max_concurrency": 16,
        "duration": 10.0,
        "completed": 100,
        "total_input_tokens": 102_400,
        "total_output_tokens": 51_200,
        "request_throughput": 10.0,
        "output_throughput": 5120.0,
        "total_token_throughput": 15_360.0,
        "max_output_tokens_per_s": 6000.0,
        "max_concurrent_requests": 16,
    }
    for metric, stats in LATENCIES_MS.items():
        for stat, value in stats.items():
            payload[f"{stat}_{metric}_ms"] = value
    payload.update(overrides)
    return payload


def raw_result_payload(**overrides: Any) -> dict[str, Any]:
    """The bench layer's own RawResult JSON (validated by its model), plus overrides."""
    base = vllm_payload()
    base["failed"] = 0
    for stat in ("mean", "median", "p90", "p99"):
        base[f"{stat}_intvty"] = 1000.0 / LATENCIES_MS["tpot"][stat]
    raw = RawResult(
        **base,
        input_lens=[1024] * 100,
        output_lens=[512] * 100,
        ttfts=[0.2] * 100,
        itls=[[0.019]] * 100,
        errors=[""] * 100,
        generated_texts=[""] * 100,
        status="ok",
        valid=True,
        invalid_reasons=[],
        not_significant=[],
        client_saturated=False,
        client=ClientInfo(version="0.1.0", processes=1, event_loop_lag_p99_ms=1.0, cpu_percent=20),
        endpoint="http://127.0.0.1:8000",
        api="chat",
        dataset=DatasetInfo(
            kind="random", input_len=1024, output_len=512, seed=0, num_prompts=100, warmup=0
        ),
        seed=0,
        started_at=STARTED_AT,
        finished_at=STARTED_AT + 10.0,
        measured_isl_mean=1024.0,
        measured_osl_mean=512.0,
        acceptance=None,
        agentic=None,
        metadata={},
    )
    payload = raw.model_dump(mode="json", by_alias=True)
    payload.update(overrides)
    return payload


def identity(**overrides: Any) -> JobIdentity:
    """A single-node job on 8 GPUs (tp 4 x pp 2)."""
    fields: dict[str, Any] = {
        "recipe_id": "dsr1-fp8-h200-vllm",
        "fingerprint": "f" * 64,
        "job_id": "dsr1-fp8-h200-vllm/c16",
        "model": "deepseek-ai/DeepSeek-R1-0528",
        "model_family": "dsr1",
        "precision": "fp8",
        "sku": "h200",
        "vendor": "nvidia",
        "framework": "vllm",
        "image": "vllm/vllm-openai:v0.11.0",
        "scenario": "fixed-seq-len",
        "isl": 1024,
        "osl": 512,
        "tp": 4,
        "pp": 2,
        "conc": 16,
    }
    fields.update(overrides)
    return JobIdentity(**fields)


RUN = RunContext(run_id="run-1", simulated=True, artifacts={"server.log": "a" * 64})


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def record(index: int = 0, **identity_overrides: Any) -> ResultRecord:
    """A distinct valid record per ``index`` (its own run id and artifact hash)."""
    run = RUN.model_copy(update={"run_id": f"run-{index}"})
    return normalize(
        raw_result_payload(),
        identity(**identity_overrides),
        run,
        artifact_sha256=sha(f"artifact-{index}"),
        source="inferx",
    )
