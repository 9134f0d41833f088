"""Rule ``memory-fit``: weights and KV cache must fit one GPU's HBM budget.

Per GPU of a single-node row, at the row's largest concurrency:

- weights = (params + MTP head or draft params) x bytes/param(precision) / tp;
- KV = sequences x context x KV bytes per token per GPU, where context is
  isl + osl + 256 (fixed-seq-len) or the agentic context from catalog/policy.yaml, and
  a GQA layer keeps ceil(kv_heads / tp) heads per GPU (an MLA latent is replicated
  unless dp-attn splits the sequences);
- a speculative setup adds its draft's KV (``draft_kv_layers`` of the target's attention
  per token) and activation workspace (catalog/gate.yaml ``headroom``);
- linear-attention (GDN/Mamba) layers keep a fixed state per sequence *slot*
  (catalog/gate.yaml ``linear_attention``), counted for every slot of max-num-seqs;
- max-num-seqs is the recipe's (typed, or a flag in ``engine.args``: the last one wins),
  else the engine's default for its version (catalog/gate.yaml), never the concurrency;
- budget = HBM GB x gpu-memory-utilization (an ``engine.args`` flag, else the recipe's
  field, else the engine default).

Errors, with the numbers: the weights plus one full context exceed the budget (the
server cannot start; ``eval_context_fit`` checks an eval server with its final command's
max-model-len, raised to the eval's max-length), or the recipe's explicit max-num-seqs
(at that concurrency) x context does; within ``warn_margin`` of it is a warning. Without
an explicit max-num-seqs the engine sizes its batch to the KV cache left, so a
concurrency whose contexts do not all fit is a warning (it queues), not an error.
Multinode rows are not sized here (their workers span nodes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from inferx_pipeline.catalog import ModelArch, Sku
from inferx_pipeline.errors import CatalogError
from inferx_pipeline.recipes.findings import Finding
from inferx_pipeline.recipes.policy.argv import recipe_flag
from inferx_pipeline.recipes.policy.base import RowRef, RuleContext, rows
from inferx_pipeline.recipes.policy.images import version_tuple
from inferx_pipeline.recipes.policy.served import Served, once
from inferx_pipeline.recipes.scenarios import FixedSeqLen, SingleNodeRow
from inferx_pipeline.recipes.schema import DRAFT_CHECKPOINT_METHODS, MaxNumSeqsRule, Recipe

GB = 1e9
# fixed-seq-len jobs run with max-model-len = isl + osl + this (InferenceX).
MODEL_LEN_PAD = 256


_SEQS_FLAGS = ("max-num-seqs", "max-running-requests", "max-batch-size")
_UTILIZATION_FLAGS = ("gpu-memory-utilization", "mem-fraction-static")


@dataclass(frozen=True, slots=True)
class MemoryNeed:
    """Bytes one GPU needs for a row, and what they are made of."""

    weights_gb: float
    kv_gb: float
    seqs: int
    context: int
    state_gb: float = 0.0
    slots: int = 0

    @property
    def total_gb(self) -> float:
        return self.weights_gb + self.kv_gb + self.state_gb


def _extra_params_b(recipe: Recipe, arch: ModelArch) -> float:
    method = recipe.speculative.method
    if method in DRAFT_CHECKPOINT_METHODS:
        return arch.draft_params_b or 0.0
    if method in ("mtp", "eagle"):
        return arch.mtp_params_b or 0.0
    return 0.0


def explicit_seqs(recipe: Recipe, conc: int) -> int | None:
    """The max-num-seqs the recipe gives the engine at ``conc`` (a flag wins), else None."""
    flag = recipe_flag(recipe.engine.args, _SEQS_FLAGS)
    if flag is not None and flag.isdigit():
        return int(flag)
    rule = recipe.engine.max_num_seqs
    if isinstance(rule, MaxNumSeqsRule):
        return rule.for_conc(conc)
    return rule


def _slots(ctx: RuleContext, conc: int) -> int:
    """Sequence slots the engine holds: the recipe's max-num-seqs, else the engine default."""
    explicit = explicit_seqs(ctx.recipe, conc)
    if explicit is not None:
        return explicit
    # The version from data only (a tag is not a fact); unknown takes the newest default.
    fact = ctx.data.images.get(ctx.recipe.engine.image)
    version = fact.engine_version if fact is not None else None
    default = ctx.data.default_max_num_seqs(
        ctx.recipe.engine.framework, version_tuple(version) if version else None
    )
    return default if default is not None else conc


def _kv_bytes_per_token(ctx: RuleContext, arch: ModelArch, row: SingleNodeRow) -> float:
    dtype = ctx.recipe.model.kv_cache_dtype
    element = ctx.catalog.kv_bytes("bf16" if dtype == "auto" else dtype)
    attention = arch.attention
    if attention.kind == "gqa" and attention.kv_heads and attention.head_dim:
        per_layer = 2 * math.ceil(attention.kv_heads / row.tp) * attention.head_dim
    else:
        per_layer = attention.kv_elements_per_token_layer()
    return arch.full_attention_layers * per_layer * element


def need_for(
    ctx: RuleContext,
    arch: ModelArch,
    ref: RowRef,
    row: SingleNodeRow,
    seqs: int,
    slots: int = 0,
    context: int | None = None,
) -> MemoryNeed:
    """Per-GPU memory need of ``row`` holding ``seqs`` full contexts (``context`` tokens;
    None = the row's) in an engine of ``slots`` sequence slots (CatalogError if unsizable)."""
    recipe = ctx.recipe
    params = arch.params_b + _extra_params_b(recipe, arch)
    weights = params * GB * ctx.catalog.weight_bytes_per_param(recipe.model.precision) / row.tp
    drafting = recipe.speculative.method not in ("none", "ngram")
    if drafting:
        weights += ctx.data.headroom.draft_workspace_gb * GB
    block = ref.block
    if context is None and isinstance(block, FixedSeqLen):
        context = block.isl + block.osl + MODEL_LEN_PAD
    elif context is None:
        context = ctx.data.memory_fit.agentic_context_tokens
    mla_split = arch.attention.kind == "mla" and row.dp_attn
    per_gpu_seqs = math.ceil(seqs / row.tp) if mla_split else seqs
    per_token = _kv_bytes_per_token(ctx, arch, row)
    if drafting and arch.full_attention_layers:
        layers = arch.full_attention_layers + ctx.data.headroom.draft_kv_layers
        per_token = per_token * layers / arch.full_attention_layers
    kv = per_gpu_seqs * context * per_token
    linear = ctx.data.linear_attention.get(recipe.model.family)
    state = slots * linear.layers * linear.state_mb_per_layer * 1e6 / row.tp if linear else 0.0
    return MemoryNeed(weights / GB, kv / GB, seqs, context, state / GB, slots)


def _utilization(ctx: RuleContext) -> float:
    engine = ctx.recipe.engine
    flag = recipe_flag(engine.args, _UTILIZATION_FLAGS)
    if flag is not None:
        try:
            return float(flag)
        except ValueError:
            pass  # not a number: the engine refuses it at start; the typed field is sized
    if engine.gpu_memory_utilization is not None:
        return engine.gpu_memory_utilization
    defaults = ctx.data.memory_fit.default_gpu_memory_utilization
    return defaults.get(engine.framework, defaults.get("vllm", 0.9))


def _budget_gb(sku: Sku, util: float) -> float:
    """What the engine may fill per GPU, in GB (1e9 bytes) as ``MemoryNeed`` counts."""
    return sku.hbm_bytes * util / GB


def _numbers(ctx: RuleContext, sku: Sku, need: MemoryNeed, util: float) -> str:
    state = (
        f" + linear-attention state {need.state_gb:.1f} GB for {need.slots} seq slots"
        if need.state_gb
        else ""
    )
    return (
        f"needs {need.total_gb:.1f} GB per GPU (weights {need.weights_gb:.1f} GB + KV cache "
        f"{need.kv_gb:.1f} GB for {need.seqs} seq{'s' if need.seqs != 1 else ''} x "
        f"{need.context:,} tokens{state}); "
        f"{ctx.recipe.sku} has {_budget_gb(sku, util):.1f} GB ({sku.hbm_gb:g} GiB HBM x {util:.2f} "
        "gpu-memory-utilization)"
    )


def _check_row(ctx: RuleContext, arch: ModelArch, sku: Sku, ref: RowRef) -> Finding | None:
    row = ref.row
    if not isinstance(row, SingleNodeRow):
        return None
    util = _utilization(ctx)
    budget = _budget_gb(sku, util)
    path = (*ref.path, "tp")
    conc = max(row.concurrencies())
    slots = _slots(ctx, conc)
    start = need_for(ctx, arch, ref, row, 1, slots)
    if start.total_gb > budget:
        return ctx.finding(
            "memory-fit",
            path,
            (
                f"row {ref.describe()} {_numbers(ctx, sku, start, util)}: no sequence fits (the "
                "weights, per-slot state and one full context exceed it); raise tp, lower "
                "max-num-seqs or serve a smaller precision"
            ),
        )
    explicit = explicit_seqs(ctx.recipe, conc) is not None
    need = need_for(ctx, arch, ref, row, min(conc, slots) if not explicit else slots, slots)
    numbers = _numbers(ctx, sku, need, util)
    if need.total_gb > budget and explicit:
        return ctx.finding(
            "memory-fit",
            path,
            (f"row {ref.describe()} {numbers}: raise tp, lower max-num-seqs or concurrency"),
        )
    if need.total_gb > budget:
        fit = int((budget - start.weights_gb - start.state_gb) / (need.kv_gb / need.seqs))
        return ctx.finding(
            "memory-fit",
            path,
            (
                f"row {ref.describe()} {numbers}: only about {fit} of {conc} sequences fit in the "
                "KV cache, the engine will queue the rest (set max-num-seqs to make it a choice)"
            ),
            "warning",
        )
    if explicit and need.total_gb > budget * (1 - ctx.data.memory_fit.warn_margin):
        return ctx.finding(
            "memory-fit",
            path,
            (
                f"row {ref.describe()} {numbers}: within "
                f"{ctx.data.memory_fit.warn_margin:.0%} of the budget"
            ),
            "warning",
        )
    return None


def memory_fit(ctx: RuleContext) -> list[Finding]:
    """Rule ``memory-fit`` (see the module doc)."""
    arch = ctx.catalog.models.get(ctx.recipe.model.family)
    sku = ctx.catalog.skus.get(ctx.recipe.sku)
    if arch is None or sku is None:
        return []  # referential reports unknown families and SKUs
    out: list[Finding] = []
    for ref in rows(ctx.recipe):
        try:
            finding = _check_row(ctx, arch, sku, ref)
        except CatalogError as err:
            finding = ctx.finding("memory-fit", ref.path, f"cannot size this row: {err}")
        if finding is not None:
            out.append(finding)
    return out


def eval_context_fit(ctx: RuleContext, served: Sequence[Served]) -> list[Finding]:
    """Rule ``memory-fit`` on eval servers whose context was raised past their row's: the
    weights, per-slot state and one full context of that max-model-len fit the budget."""
    arch = ctx.catalog.models.get(ctx.recipe.model.family)
    sku = ctx.catalog.skus.get(ctx.recipe.sku)
    if arch is None or sku is None:
        return []
    refs = {ref.path: ref for ref in rows(ctx.recipe)}
    util = _utilization(ctx)
    out: list[Finding] = []
    for job in served:
        ref = refs.get(job.row)
        if not job.is_eval or job.max_model_len is None or ref is None:
            continue
        row = ref.row
        if not isinstance(row, SingleNodeRow):
            continue
        try:
            slots = _slots(ctx, max(row.concurrencies()))
            start = need_for(ctx, arch, ref, row, 1, slots, context=job.max_model_len)
            row_context = need_for(ctx, arch, ref, row, 1, slots).context
        except CatalogError:
            continue  # memory_fit reports a row it cannot size
        if job.max_model_len <= row_context or start.total_gb <= _budget_gb(sku, util):
            continue
        out.append(
            ctx.finding(
                "memory-fit",
                (*ref.path, "tp"),
                f"eval server of row {ref.describe()} {_numbers(ctx, sku, start, util)}: its "
                f"context is the eval's max-length (catalog/evals.yaml) and one does not fit; "
                "raise tp, serve a smaller precision or run this recipe with eval.mode: never",
            )
        )
    return once(out)
