"""The roofline step model and the deployment constants it is built on."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferx_pipeline.catalog import load_catalog
from inferx_pipeline.errors import SimError
from inferx_pipeline.sim.core import build_core
from inferx_pipeline.sim.deployment import GB, Deployment, build_deployment
from inferx_pipeline.sim.efficiency import load_efficiency
from inferx_pipeline.sim.roofline import StepLoad, allreduce_s, attn_pairs, step_cost
from tests.sim.conftest import MakeConfig


def _deployment(make_config: MakeConfig, catalog_dir: Path, **overrides: object) -> Deployment:
    config = make_config(**overrides)
    eff = load_efficiency(catalog_dir).lookup(config.engine, config.sku)
    return build_deployment(config, load_catalog(catalog_dir), eff)


def test_single_decode_is_weight_bandwidth_bound(
    make_config: MakeConfig, catalog_dir: Path
) -> None:
    dep = _deployment(make_config, catalog_dir)
    cost = step_cost(dep, StepLoad(tokens=1, kv_tokens=1, attn_pairs=1.0))
    weights = 27 * GB * 2.0  # qwen3.8-27b bf16
    eff = dep.efficiency
    assert cost.memory_s > cost.compute_s
    assert cost.comm_s == 0.0  # TP 1: no all-reduce
    expected = weights / (eff.mbu * 3.35e12) + eff.step_overhead_ms / 1000
    assert cost.total_s == pytest.approx(expected, rel=1e-4)


def test_long_prefill_is_compute_bound(make_config: MakeConfig, catalog_dir: Path) -> None:
    dep = _deployment(make_config, catalog_dir)
    cost = step_cost(dep, StepLoad(tokens=8192, kv_tokens=8192, attn_pairs=attn_pairs(0, 8192)))
    assert cost.compute_s > cost.memory_s
    assert cost.compute_s > 2 * 27e9 * 8192 / (dep.efficiency.mfu * 989e12)


def test_kv_reads_lengthen_decode_steps(make_config: MakeConfig, catalog_dir: Path) -> None:
    dep = _deployment(make_config, catalog_dir)
    short = step_cost(dep, StepLoad(tokens=64, kv_tokens=64 * 100, attn_pairs=64 * 100.0))
    long = step_cost(dep, StepLoad(tokens=64, kv_tokens=64 * 4000, attn_pairs=64 * 4000.0))
    extra_bytes = 64 * 3900 * dep.kv_bytes_per_token / dep.kv_shards
    assert long.memory_s - short.memory_s == pytest.approx(
        extra_bytes / (dep.efficiency.mbu * dep.hbm_bytes_per_s), rel=1e-6
    )


def test_moe_touches_only_routed_experts(make_config: MakeConfig, catalog_dir: Path) -> None:
    dep = _deployment(make_config, catalog_dir, model_family="minimaxm3", precision="fp8", tp=4)
    assert dep.experts == 256
    one, many, all_ = dep.weight_bytes(1), dep.weight_bytes(8), dep.weight_bytes(1000)
    assert one < many < all_
    assert many - one == pytest.approx(7 * 8 * dep.expert_weight_bytes / 4)
    assert all_ == dep.weight_bytes(32)  # 32 tokens x 8 experts = every expert
    total = (dep.dense_weight_bytes + 256 * dep.expert_weight_bytes) / GB
    assert total == pytest.approx(230 * 1.03)


def test_tensor_parallel_adds_allreduce(make_config: MakeConfig, catalog_dir: Path) -> None:
    tp1 = _deployment(make_config, catalog_dir)
    tp4 = _deployment(make_config, catalog_dir, tp=4)
    assert allreduce_s(tp1, 16) == 0.0
    latency = 2 * 64 * tp4.efficiency.allreduce_latency_us * 1e-6  # 2 per layer x 64 layers
    assert allreduce_s(tp4, 1) == pytest.approx(latency, rel=0.01)
    assert allreduce_s(tp4, 4096) > allreduce_s(tp4, 1)
    assert tp4.weight_bytes(1) == pytest.approx(tp1.weight_bytes(1) / 4)


def test_speculative_verify_costs_draft_forwards(
    make_config: MakeConfig, catalog_dir: Path
) -> None:
    dep = _deployment(
        make_config, catalog_dir, spec_method="mtp", num_speculative_tokens=3, acceptance_length=2.5
    )
    plain = step_cost(dep, StepLoad(tokens=4, kv_tokens=4000, attn_pairs=4000.0))
    spec = step_cost(dep, StepLoad(4, 4000, 4000.0, draft_seqs=1), draft_tokens=3)
    assert plain.draft_s == 0.0
    assert spec.draft_s == pytest.approx(
        3 * dep.draft_scale * dep.weight_bytes(1) / (dep.efficiency.mbu * dep.hbm_bytes_per_s),
        rel=1e-6,
    )


def test_kv_capacity_formula(make_config: MakeConfig, catalog_dir: Path) -> None:
    # With DP attention the KV splits over all TP GPUs: the formula exactly.
    dep = _deployment(make_config, catalog_dir, tp=2, dp_attn=True)
    kv_per_token = 16 * 2 * 4 * 256 * 2.0  # layers x K,V x kv_heads x head_dim x bf16
    expected = (2 * 80 * 2**30 * 0.9 - 27 * GB * 2.0) / kv_per_token  # HBM in GiB, weights in GB
    assert dep.kv_capacity_tokens == int(expected)


def test_mla_kv_is_replicated_across_tp(make_config: MakeConfig, catalog_dir: Path) -> None:
    common = {"sku": "h200", "model_family": "dsr1", "precision": "fp8", "tp": 8}
    plain = _deployment(make_config, catalog_dir, **common)
    dp = _deployment(make_config, catalog_dir, **common, dp_attn=True)
    assert plain.kv_shards == 1
    assert dp.kv_capacity_tokens == pytest.approx(8 * plain.kv_capacity_tokens, rel=1e-6)


def test_weights_that_do_not_fit_are_refused(make_config: MakeConfig) -> None:
    with pytest.raises(SimError, match=r"dsr1 at fp8 needs .* GB of weights per GPU at tp=1"):
        build_core(make_config(model_family="dsr1", precision="fp8"))


def test_what_inferencex_serves_on_four_b200s_fits(
    make_config: MakeConfig, catalog_dir: Path
) -> None:
    # DeepSeek-R1 FP8 at TP4 on B200 (InferenceX's dsr1-fp8-b200-sglang): 172.8 GB of
    # weights per GPU fit under 0.9 x 180 GiB (173.9 GB), which 180e9 bytes would refuse.
    dep = _deployment(
        make_config, catalog_dir, sku="b200", model_family="dsr1", precision="fp8", tp=4
    )
    assert dep.kv_capacity_tokens > 9472  # one full context of its 8k/1k rows


def test_context_longer_than_kv_is_refused(make_config: MakeConfig) -> None:
    with pytest.raises(SimError, match="max_model_len 1000000 is larger than the KV cache"):
        build_core(make_config(max_model_len=1_000_000))
