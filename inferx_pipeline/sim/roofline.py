"""The step-time model: one forward pass of a continuous batch, priced by a roofline.

``step = max(bytes / (MBU x HBM BW), FLOPs / (MFU x peak)) + all-reduces + overhead
+ draft``, all per GPU. Pure functions of a ``Deployment`` and a ``StepLoad``.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferx_pipeline.sim.deployment import ACTIVATION_BYTES, Deployment

ALLREDUCES_PER_LAYER = 2  # after attention and after the MLP / MoE block


@dataclass(frozen=True, slots=True)
class StepLoad:
    """What one step computes, summed over the sequences it schedules.

    ``tokens``: query tokens (prefill chunk tokens + decode positions, k+1 per verify).
    ``kv_tokens``: context tokens whose KV the step reads or writes.
    ``attn_pairs``: (query, context) pairs attention multiplies (causal within a chunk).
    ``draft_seqs``: sequences that run k draft forwards before this verify step.
    """

    tokens: int
    kv_tokens: int
    attn_pairs: float
    draft_seqs: int = 0


@dataclass(frozen=True, slots=True)
class StepCost:
    """Breakdown of one step's duration, seconds."""

    memory_s: float
    compute_s: float
    comm_s: float
    overhead_s: float
    draft_s: float

    @property
    def total_s(self) -> float:
        """The step's wall time: the roofline bound plus the serial costs."""
        return max(self.memory_s, self.compute_s) + self.comm_s + self.overhead_s + self.draft_s


def _forward_bound(dep: Deployment, bytes_: float, flops: float) -> tuple[float, float]:
    eff = dep.efficiency
    return (
        bytes_ / (eff.mbu * dep.hbm_bytes_per_s),
        flops / (eff.mfu * dep.peak_flops),
    )


def allreduce_s(dep: Deployment, tokens: int) -> float:
    """Ring all-reduces of one forward over ``tokens`` tokens, seconds (0 at TP 1)."""
    if dep.gpus == 1:
        return 0.0
    message = tokens * dep.hidden_size * ACTIVATION_BYTES
    wire = 2.0 * (dep.gpus - 1) / dep.gpus * message / dep.interconnect_bytes_per_s
    latency = dep.efficiency.allreduce_latency_us * 1e-6
    return ALLREDUCES_PER_LAYER * dep.layers * (latency + wire)


def draft_s(dep: Deployment, draft_seqs: int, draft_tokens: int) -> float:
    """k sequential draft forwards over ``draft_seqs`` sequences, seconds."""
    if draft_seqs == 0 or dep.draft_scale == 0 or draft_tokens == 0:
        return 0.0
    bytes_ = dep.draft_scale * dep.weight_bytes(draft_seqs)
    flops = dep.draft_scale * 2.0 * dep.active_params * draft_seqs / dep.gpus
    memory, compute = _forward_bound(dep, bytes_, flops)
    return draft_tokens * max(memory, compute)


def step_bytes(dep: Deployment, load: StepLoad) -> float:
    """Bytes one GPU moves in the step: touched weights + the KV it reads and writes."""
    return dep.weight_bytes(load.tokens) + load.kv_tokens * dep.kv_bytes_per_token / dep.kv_shards


def step_flops(dep: Deployment, load: StepLoad) -> float:
    """FLOPs one GPU performs in the step: matmuls over active params + attention."""
    dense = 2.0 * dep.active_params * load.tokens
    return (dense + dep.attn_flops_per_pair * load.attn_pairs) / dep.gpus


def step_cost(dep: Deployment, load: StepLoad, draft_tokens: int = 0) -> StepCost:
    """Price one step; ``draft_tokens`` is k when ``load.draft_seqs`` sequences speculate."""
    memory, compute = _forward_bound(dep, step_bytes(dep, load), step_flops(dep, load))
    return StepCost(
        memory_s=memory,
        compute_s=compute,
        comm_s=allreduce_s(dep, load.tokens),
        overhead_s=dep.efficiency.step_overhead_ms * 1e-3,
        draft_s=draft_s(dep, load.draft_seqs, draft_tokens),
    )


def attn_pairs(context_before: int, query: int) -> float:
    """(query, context) pairs for ``query`` new tokens after ``context_before`` cached ones."""
    return query * context_before + query * (query + 1) / 2.0
