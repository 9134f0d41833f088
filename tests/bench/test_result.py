"""RawResult JSON: a superset of vllm bench serve --save-result keys plus inferx keys."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from inferx_pipeline.bench.config import BenchConfig
from inferx_pipeline.bench.datasets import RandomSpec
from inferx_pipeline.bench.fake import FakeSender
from inferx_pipeline.bench.result import RawResult
from inferx_pipeline.bench.runner import run_benchmark

VLLM_KEYS = {
    "date", "backend", "model_id", "tokenizer_id", "num_prompts", "request_rate",
    "burstiness", "max_concurrency", "duration", "completed", "failed",
    "total_input_tokens", "total_output_tokens", "request_throughput", "output_throughput",
    "total_token_throughput", "max_output_tokens_per_s", "max_concurrent_requests",
    "input_lens", "output_lens", "ttfts", "itls", "errors", "generated_texts",
}  # fmt: skip
STATS = ("mean", "median", "std", "p50", "p90", "p95", "p99", "p99.9")
INFERX_KEYS = {
    "schema_version", "status", "valid", "invalid_reasons", "not_significant",
    "client_saturated", "client_contended", "client", "endpoint", "api", "dataset", "seed",
    "started_at", "finished_at", "measured_isl_mean", "measured_osl_mean", "acceptance", "agentic",
    "metadata", "mean_intvty", "median_intvty", "p90_intvty", "p99_intvty", "min_duration_s",
}  # fmt: skip


def _result(**overrides: object) -> RawResult:
    config = BenchConfig(
        endpoint="http://127.0.0.1:9/v1",
        model="m",
        dataset=RandomSpec(input_len=8, output_len=4),
        concurrency=2,
        scrape_metrics=False,
        metadata={"fingerprint": "abc", "simulated": True},
        **overrides,  # type: ignore[arg-type]  # test helper passes config fields
    )
    return asyncio.run(run_benchmark(config, sender=FakeSender()))


def test_json_has_every_contract_key() -> None:
    data = json.loads(_result().to_json())
    expected = VLLM_KEYS | INFERX_KEYS
    expected |= {f"{s}_{m}_ms" for s in STATS for m in ("ttft", "tpot", "itl", "e2el")}
    assert expected <= set(data)
    assert data["schema_version"] == 2
    assert data["request_rate"] == "inf"
    assert data["backend"] == "vllm"
    assert set(data["client"]) == {"version", "processes", "event_loop_lag_p99_ms", "cpu_percent"}
    assert data["dataset"]["kind"] == "random"
    assert data["metadata"] == {"fingerprint": "abc", "simulated": True}


def test_json_round_trips_through_the_model() -> None:
    result = _result(request_rate=50.0)
    again = RawResult.model_validate_json(result.to_json())
    assert again == result
    assert again.request_rate == 50.0


def test_not_significant_keys_are_null_in_json() -> None:
    data = json.loads(_result().to_json())  # 20 requests: p90 needs 64
    assert data["p90_ttft_ms"] is None
    assert "p90_ttft_ms" in data["not_significant"]
    assert data["p99.9_itl_ms"] is None


def test_chat_api_reports_openai_chat_backend() -> None:
    assert _result(api="chat").backend == "openai-chat"


def test_schema_file_keys_match(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(_result().to_json())
    assert RawResult.model_validate_json(path.read_text()).completed == 20
