"""Prometheus exposition: vLLM's metric names, labels and spec-decode counting."""

from __future__ import annotations

from inferx_pipeline.bench.prometheus import parse
from inferx_pipeline.sim.prom import SimMetrics

REQUIRED = (
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:kv_cache_usage_perc",
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "vllm:time_to_first_token_seconds_bucket",
    "vllm:inter_token_latency_seconds_count",
    "vllm:e2e_request_latency_seconds_sum",
    "vllm:num_preemptions_total",
    "vllm:spec_decode_num_drafts_total",
    "vllm:spec_decode_num_draft_tokens_total",
    "vllm:spec_decode_num_accepted_tokens_total",
)


def test_every_vllm_name_is_exported_with_model_label() -> None:
    text = SimMetrics("m", draft_tokens=0).render().decode()
    samples = parse(text).samples
    for name in REQUIRED:
        assert name in samples, name
    assert 'vllm:num_requests_running{engine="0",model_name="m"} 0.0' in text


def test_drafts_are_counted_like_vllm() -> None:
    metrics = SimMetrics("m", draft_tokens=3)
    for accepted in (0, 3, 2, 1):
        metrics.record_draft(3, accepted)
    samples = parse(metrics.render().decode()).samples
    assert samples["vllm:spec_decode_num_drafts_total"] == 4
    assert samples["vllm:spec_decode_num_draft_tokens_total"] == 12
    assert samples["vllm:spec_decode_num_accepted_tokens_total"] == 6
    assert samples["vllm:spec_decode_num_accepted_tokens_per_pos_total"] == 6
    text = metrics.render().decode()
    assert 'position="0"} 3.0' in text and 'position="2"} 1.0' in text


def test_registries_are_per_server() -> None:
    first, second = SimMetrics("a", 0), SimMetrics("b", 0)
    first.prompt_tokens.inc(5)
    assert parse(second.render().decode()).samples["vllm:prompt_tokens_total"] == 0
