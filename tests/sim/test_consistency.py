"""Self-consistency: the real benchmark client against the simulator on loopback.

Step times are 20-30 ms where timing is asserted, so ~1 ms of scheduling jitter on a
loaded 2-core box stays well inside the tolerances.
"""

from __future__ import annotations

import pytest

from inferx_pipeline.sim.core import build_core
from tests.sim.conftest import MakeConfig
from tests.sim.loopback import intended_tpot_s, intended_ttft_s, measure, run


def test_concurrency_one_matches_the_intended_steps(make_config: MakeConfig) -> None:
    config = make_config()  # one H100, 27B dense bf16: ~23 ms decode steps
    isl, osl, prompts = 256, 50, 5
    result, _ = run(measure(config, isl, osl, concurrency=1, num_prompts=prompts))
    core = build_core(config)
    assert result.completed == prompts
    # Medians over requests: one request delayed by a CPU hog on a loaded box cannot fail it.
    assert result.median_tpot_ms is not None and result.median_ttft_ms is not None
    tpot_ms = 1000 * intended_tpot_s(core, isl, osl)
    assert 20 < tpot_ms < 30
    assert result.median_tpot_ms == pytest.approx(tpot_ms, rel=0.02)
    assert abs(result.median_ttft_ms - 1000 * intended_ttft_s(core, isl)) < 10.0


def test_littles_law_holds(make_config: MakeConfig) -> None:
    config = make_config(time_scale=0.5)
    concurrency = 8
    result, _ = run(measure(config, isl=32, osl=16, concurrency=concurrency, num_prompts=80))
    assert result.failed == 0
    assert result.mean_e2el_ms is not None
    in_flight = result.request_throughput * result.mean_e2el_ms / 1000
    assert in_flight == pytest.approx(concurrency, rel=0.03)


def test_metrics_token_totals_equal_the_clients(make_config: MakeConfig) -> None:
    config = make_config(time_scale=0.2)
    result, samples = run(measure(config, isl=100, osl=25, concurrency=6, num_prompts=18))
    assert result.completed == 18
    assert samples["vllm:prompt_tokens_total"] == result.total_input_tokens == 18 * 100
    assert samples["vllm:generation_tokens_total"] == result.total_output_tokens == 18 * 25
    assert samples["vllm:e2e_request_latency_seconds_count"] == 18


def test_measured_acceptance_length_matches_the_target(make_config: MakeConfig) -> None:
    config = make_config(
        spec_method="mtp", num_speculative_tokens=3, acceptance_length=2.6, time_scale=0.2
    )
    osl, prompts = 200, 12
    result, samples = run(measure(config, isl=64, osl=osl, concurrency=4, num_prompts=prompts))
    assert result.total_output_tokens == osl * prompts >= 2000
    assert result.acceptance is not None
    assert result.acceptance.acceptance_length == pytest.approx(2.6, rel=0.05)
    drafts = samples["vllm:spec_decode_num_drafts_total"]
    assert samples["vllm:spec_decode_num_draft_tokens_total"] == 3 * drafts
    # One SSE chunk per verify step: tokens per chunk after the first is the realized AL.
    chunks = sum(len(gaps) for gaps in result.itls)
    assert (result.total_output_tokens - prompts) / chunks == pytest.approx(2.6, rel=0.05)
