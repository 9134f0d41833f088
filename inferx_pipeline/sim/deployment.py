"""A model deployed on TP GPUs of one SKU: the byte and FLOP constants the roofline needs.

Derived once from the catalog; every figure is per GPU unless its name says otherwise.
Assumptions, stated once:

- Weights shard evenly over the TP GPUs (attention, dense MLP and experts alike).
- MoE: ``params = dense + experts x expert``, ``active = dense + experts_per_token x expert``,
  which gives the per-expert and dense byte counts from the catalog's two totals.
- KV is split over ``kv_shards`` of the TP GPUs and replicated over the rest: GQA splits up
  to its KV-head count, MLA's single latent is replicated on every rank, and DP attention
  gives each rank its own sequences (a split by TP). KV capacity therefore is
  ``(HBM x utilization - weights / TP) x kv_shards / KV bytes per token``, which is the
  issue's ``(TP x HBM x util - weights) / KV bytes`` when KV splits over all TP GPUs.
- A speculative draft (MTP head, EAGLE head, draft model) is costed as a scaled copy of
  the target: ``draft_params / params`` of its bytes and FLOPs.
"""

from __future__ import annotations

from pydantic import Field

from inferx_pipeline.catalog import Catalog, ModelArch
from inferx_pipeline.errors import SimError
from inferx_pipeline.sim.config import SimConfig
from inferx_pipeline.sim.efficiency import Efficiency
from inferx_pipeline.strict import FrozenModel

GB = 1e9
ACTIVATION_BYTES = 2.0  # all-reduce messages carry bf16 activations
MAX_DEFAULT_MODEL_LEN = 131_072


class Deployment(FrozenModel):
    """Constants of one server (model x SKU x TP x dtypes); every rate is per GPU."""

    gpus: int = Field(ge=1, description="GPUs of the server (= TP).")
    hbm_bytes_per_s: float
    peak_flops: float = Field(description="Dense FLOP/s at the weight precision.")
    interconnect_bytes_per_s: float
    scaleout_bytes_per_s: float = Field(description="Scale-out NIC bandwidth (KV transfer).")
    layers: int
    hidden_size: int
    dense_weight_bytes: float = Field(description="Non-expert weights, whole model.")
    expert_weight_bytes: float = Field(description="One routed expert, all layers.")
    experts: int = Field(ge=0, description="Routed experts; 0 for a dense model.")
    experts_per_token: int = Field(ge=0)
    active_params: float = Field(description="Parameters per token (FLOPs = 2 x this).")
    attn_flops_per_pair: float = Field(description="FLOPs per (query token, context token).")
    kv_bytes_per_token: float = Field(description="KV bytes per token, all layers, unsharded.")
    kv_shards: int = Field(ge=1, description="GPUs the KV of one token is split over.")
    draft_scale: float = Field(ge=0, description="Draft params / target params (0 = none).")
    kv_capacity_tokens: int = Field(ge=0, description="KV-cache tokens the server can hold.")
    efficiency: Efficiency

    def kv_transfer_s(self, kv_bytes: float) -> float:
        """Unscaled seconds to receive ``kv_bytes`` of whole (unsharded) KV from a prefill worker.

        Each of the GPUs receives its shard over its own NIC, so the link is
        ``scaleout x gpus``; the prefill side's GPU count is not modelled.
        """
        return kv_bytes / (self.scaleout_bytes_per_s * self.gpus)

    def weight_bytes(self, tokens: int) -> float:
        """Weight bytes one step reads on each GPU when it processes ``tokens`` tokens."""
        touched = min(self.experts, tokens * self.experts_per_token)
        return (self.dense_weight_bytes + touched * self.expert_weight_bytes) / self.gpus


def _draft_params_b(arch: ModelArch, config: SimConfig) -> float:
    method = config.spec_method
    if method in ("none", "ngram"):  # n-gram drafts are looked up in the prompt: no weights
        return 0.0
    if method == "mtp":
        found = arch.mtp_params_b
    elif method == "draft_model":
        found = arch.draft_params_b
    else:  # EAGLE-style heads: the catalogued draft, else about one decoder layer
        found = arch.draft_params_b or arch.mtp_params_b or arch.params_b / arch.layers
    if found is None:
        field = "mtp_params_b" if method == "mtp" else "draft_params_b"
        raise SimError(
            f"catalog/models.yaml: {arch.id}: no {field} for --spec-method {method}; "
            f"add {field} to the model or choose another method"
        )
    return found


def _kv_shards(arch: ModelArch, config: SimConfig) -> int:
    if config.dp_attn:
        return config.tp
    if arch.attention.kind == "mla":
        return 1
    return min(config.tp, arch.attention.kv_heads or 1)


def _attn_flops_per_pair(arch: ModelArch) -> float:
    att = arch.attention
    if att.kind == "mla":  # absorbed MLA: QK over latent + rope dims, PV over the latent
        qk = (att.kv_lora_rank or 0) + (att.rope_head_dim or 0)
        pv = att.kv_lora_rank or 0
    else:
        qk = pv = att.head_dim or 0
    return 2.0 * att.heads * (qk + pv) * arch.full_attention_layers


def _split_weights(arch: ModelArch, bytes_per_param: float) -> tuple[float, float]:
    """(dense bytes, bytes per routed expert) of the whole model."""
    if arch.moe is None or arch.moe.experts <= arch.moe.experts_per_token:
        return arch.params_b * GB * bytes_per_param, 0.0
    expert_b = (arch.params_b - arch.active_params_b) / (
        arch.moe.experts - arch.moe.experts_per_token
    )
    dense_b = arch.active_params_b - arch.moe.experts_per_token * expert_b
    return dense_b * GB * bytes_per_param, expert_b * GB * bytes_per_param


def build_deployment(config: SimConfig, catalog: Catalog, efficiency: Efficiency) -> Deployment:
    """The deployment of ``config``; SimError when the weights leave no room for KV cache."""
    sku = catalog.sku(config.sku)
    arch = catalog.model(config.model_family)
    bpp = catalog.weight_bytes_per_param(config.precision)
    dense, expert = _split_weights(arch, bpp)
    draft_scale = _draft_params_b(arch, config) / arch.params_b
    weights_per_gpu = arch.params_b * GB * bpp * (1 + draft_scale) / config.tp
    free_per_gpu = sku.hbm_bytes * config.gpu_memory_utilization - weights_per_gpu
    kv_bytes = (
        arch.attention.kv_elements_per_token_layer()
        * arch.full_attention_layers
        * catalog.kv_bytes(config.kv_dtype)
    )
    shards = _kv_shards(arch, config)
    if free_per_gpu <= 0:
        raise SimError(
            f"{arch.id} at {config.precision} needs {weights_per_gpu / GB:.1f} GB of weights per "
            f"GPU at tp={config.tp}, over {config.gpu_memory_utilization:g} x "
            f"{sku.hbm_bytes / GB:.1f} GB ({sku.hbm_gb:g} GiB) of {sku.id}; raise --tp or lower "
            "the precision"
        )
    return Deployment(
        gpus=config.tp,
        hbm_bytes_per_s=sku.hbm_tbps * 1e12,
        peak_flops=sku.tflops(config.precision) * 1e12,
        interconnect_bytes_per_s=sku.interconnect_gbps * GB,
        scaleout_bytes_per_s=sku.scaleout_gbps * GB,
        layers=arch.layers,
        hidden_size=arch.hidden_size,
        dense_weight_bytes=dense,
        expert_weight_bytes=expert,
        experts=arch.moe.experts if arch.moe and expert else 0,
        experts_per_token=arch.moe.experts_per_token if arch.moe and expert else 0,
        active_params=arch.active_params_b * GB,
        attn_flops_per_pair=_attn_flops_per_pair(arch),
        kv_bytes_per_token=kv_bytes,
        kv_shards=shards,
        draft_scale=draft_scale,
        kv_capacity_tokens=int(free_per_gpu * shards / kv_bytes),
        efficiency=efficiency,
    )


def resolve_max_model_len(config: SimConfig, deployment: Deployment) -> int:
    """``--max-model-len`` or its default; SimError when the KV cache cannot hold one sequence.

    Like vLLM, a server whose KV cache is smaller than its context cap refuses to start.
    """
    wanted = config.max_model_len or min(MAX_DEFAULT_MODEL_LEN, deployment.kv_capacity_tokens)
    if wanted > deployment.kv_capacity_tokens:
        raise SimError(
            f"max_model_len {wanted} is larger than the KV cache "
            f"({deployment.kv_capacity_tokens} tokens on {config.tp} x {config.sku}); "
            "lower --max-model-len, raise --gpu-memory-utilization or --tp"
        )
    return wanted
