"""Virtual-time predictions: the saturation curve and its dependence on HBM."""

from __future__ import annotations

import itertools

import pytest

from inferx_pipeline.errors import SimError
from inferx_pipeline.sim.predict import PredictPoint, predict
from tests.sim.conftest import MakeConfig

LEVELS = [1, 8, 32, 64, 128, 256, 512]


def _curve(make_config: MakeConfig, sku: str) -> list[PredictPoint]:
    # A MoE with a large GQA KV cache: at this context the batch is bounded by KV blocks.
    config = make_config(
        sku=sku, model_family="minimaxm3", precision="fp8", tp=4, max_num_seqs=1024,
        max_model_len=8192,
    )  # fmt: skip
    return predict(config, isl=2048, osl=256, concurrencies=LEVELS, prompts_per_conc=2)


def _saturation(points: list[PredictPoint]) -> int:
    best = max(p.output_tput_per_gpu for p in points)
    return next(p.concurrency for p in points if p.output_tput_per_gpu >= 0.9 * best)


def test_throughput_rises_then_saturates_earlier_with_less_hbm(make_config: MakeConfig) -> None:
    h100, h200 = _curve(make_config, "h100"), _curve(make_config, "h200")
    for curve in (h100, h200):
        tput = [p.output_tput_per_gpu for p in curve]
        assert all(b >= 0.98 * a for a, b in itertools.pairwise(tput))
        assert tput[3] > 5 * tput[0]  # concurrency 64 vs 1
        inter = [p.interactivity for p in curve]
        assert inter[-1] < inter[0]
    assert h100[-1].output_tput_per_gpu < 1.1 * h100[4].output_tput_per_gpu  # flat past 128
    assert h100[-1].preemptions > 0  # KV-bound: the batch cannot grow
    assert _saturation(h100) < _saturation(h200)


def test_predictions_are_deterministic_and_count_speculation(make_config: MakeConfig) -> None:
    config = make_config(spec_method="mtp", num_speculative_tokens=3, acceptance_length=2.5)
    first = predict(config, isl=128, osl=64, concurrencies=[4], prompts_per_conc=3)
    again = predict(config, isl=128, osl=64, concurrencies=[4], prompts_per_conc=3)
    assert first == again
    assert first[0].acceptance_length == pytest.approx(2.5, rel=0.1)
    plain = predict(make_config(), isl=128, osl=64, concurrencies=[4], prompts_per_conc=3)
    assert first[0].interactivity > 1.5 * plain[0].interactivity


def test_concurrency_one_tpot_is_the_decode_step(make_config: MakeConfig) -> None:
    (point,) = predict(make_config(), isl=256, osl=40, concurrencies=[1], prompts_per_conc=2)
    assert point.mean_tpot_ms == pytest.approx(23.0, rel=0.02)
    assert point.interactivity == pytest.approx(1000 / point.mean_tpot_ms)
    assert point.output_tput_per_gpu == pytest.approx(2 * 40 / point.duration_s)


def test_requests_longer_than_the_context_are_refused(make_config: MakeConfig) -> None:
    with pytest.raises(SimError, match="isl \\+ osl = 5000 exceeds max_model_len 4096"):
        predict(make_config(), isl=4000, osl=1000, concurrencies=[1])
