"""The ``scenarios:`` block of a recipe: what to measure, and over which search space.

The shape is InferenceX's master-config ``scenarios`` block, unchanged, so that a
master-config entry imports as a recipe without translation::

    scenarios:
      fixed-seq-len:
        - isl: 8192
          osl: 1024
          search-space:
            - { tp: 8, ep: 8, dp-attn: true, conc-start: 4, conc-end: 64 }
      agentic-coding:
        - dram-utilization: 0.8
          search-space:
            - { tp: 8, kv-offloading: dram, kv-offload-backend: {name: hicache},
                conc-list: [4, 8, 16], spec-decoding: mtp }

A search-space row is either single-node (top-level ``tp``) or multinode (``prefill``
and ``decode`` worker pools); the row's keys decide which, as they do in InferenceX.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from inferx_pipeline.strict import StrictModel

SpecDecodingArm = Literal["none", "mtp", "eagle", "eagle3", "dspark", "draft_model", "ngram"]
KvOffloading = Literal["none", "dram"]

# InferenceX doubles a concurrency range from its start (``--step-size`` default).
CONC_RANGE_STEP = 2


def conc_range(start: int, end: int, step: int = CONC_RANGE_STEP) -> tuple[int, ...]:
    """Concurrencies ``start, start*step, ...`` capped at and always including ``end``.

    ``conc_range(4, 100)`` is ``(4, 8, 16, 32, 64, 100)``. ``start > end`` yields ``()``.
    """
    values: list[int] = []
    conc = start
    while conc <= end:
        values.append(conc)
        if conc == end:
            break
        conc = min(conc * step, end)
    return tuple(values)


class Component(StrictModel):
    """A named, optionally versioned component: a router or a KV-offload backend."""

    name: str = Field(min_length=1, description="Component name, e.g. sglang-router, hicache.")
    version: str | None = Field(default=None, description="Version or commit, when pinned.")


class _Concurrency(StrictModel):
    """Concurrency given as an explicit list or as a doubling start/end range."""

    conc_list: tuple[Annotated[int, Field(gt=0)], ...] | None = Field(
        default=None, alias="conc-list", description="Explicit concurrencies, in run order."
    )
    conc_start: int | None = Field(
        default=None, gt=0, alias="conc-start", description="First concurrency of a range."
    )
    conc_end: int | None = Field(
        default=None,
        gt=0,
        alias="conc-end",
        description="Last concurrency of a range; the range doubles from conc-start up to it.",
    )

    @model_validator(mode="after")
    def _one_form(self) -> _Concurrency:
        has_range = self.conc_start is not None or self.conc_end is not None
        if self.conc_list is not None and has_range:
            raise ValueError("give either conc-list or conc-start/conc-end, not both")
        if self.conc_list is None and (self.conc_start is None or self.conc_end is None):
            raise ValueError("give conc-list, or both conc-start and conc-end")
        if self.conc_list is not None and not self.conc_list:
            raise ValueError("conc-list: expected at least one concurrency")
        start, end = self.conc_start, self.conc_end
        if start is not None and end is not None and start > end:
            raise ValueError(f"conc-start {start} is above conc-end {end}")
        return self

    def concurrencies(self) -> tuple[int, ...]:
        """The concurrencies this row runs, in order (list as given, or the doubled range)."""
        if self.conc_list is not None:
            return self.conc_list
        assert self.conc_start is not None and self.conc_end is not None  # by _one_form
        return conc_range(self.conc_start, self.conc_end)


class _RowCommon(_Concurrency):
    """Keys every search-space row may carry, single-node or multinode."""

    spec_decoding: SpecDecodingArm = Field(
        default="none",
        alias="spec-decoding",
        description="Speculative-decoding arm of this row; details live in the recipe's "
        "speculative-decoding block. none = plain decoding.",
    )
    kv_offloading: KvOffloading | None = Field(
        default=None,
        alias="kv-offloading",
        description="KV-cache offload arm (agentic-coding): none = GPU-resident, dram = CPU DRAM.",
    )
    kv_offload_backend: Component | None = Field(
        default=None,
        alias="kv-offload-backend",
        description="Offload backend for kv-offloading: dram (hicache, lmcache, mooncake, ...).",
    )
    router: Component | None = Field(
        default=None, description="Request router in front of the workers, when one is used."
    )
    kv_p2p_transfer: str | None = Field(
        default=None,
        alias="kv-p2p-transfer",
        description="Prefill-to-decode KV transfer library (nixl, mori, mooncake, ucx).",
    )


class SingleNodeRow(_RowCommon):
    """One single-node search-space row: a parallelism layout and its concurrencies."""

    tp: int = Field(gt=0, description="Tensor-parallel size.")
    ep: int = Field(default=1, gt=0, description="Expert-parallel size (1 = no EP).")
    dp_attn: bool = Field(
        default=False, alias="dp-attn", description="Data-parallel attention across the TP ranks."
    )
    pp: int = Field(default=1, gt=0, description="Pipeline-parallel size.")
    dcp_size: int = Field(
        default=1, gt=0, alias="dcp-size", description="Decode context-parallel size."
    )
    pcp_size: int = Field(
        default=1, gt=0, alias="pcp-size", description="Prefill context-parallel size."
    )

    @property
    def gpus(self) -> int:
        """GPUs one server of this row uses (tp x pp x pcp)."""
        return self.tp * self.pp * self.pcp_size


class Worker(StrictModel):
    """One worker pool of a multinode row (prefill or decode)."""

    num_worker: int = Field(
        ge=0, alias="num-worker", description="Replicas in this pool (0 = aggregated serving)."
    )
    tp: int = Field(gt=0, description="Tensor-parallel size per replica.")
    ep: int = Field(default=1, gt=0, description="Expert-parallel size per replica.")
    dp_attn: bool = Field(
        default=False, alias="dp-attn", description="Data-parallel attention per replica."
    )
    pp: int = Field(default=1, gt=0, description="Pipeline-parallel size per replica.")
    dcp_size: int = Field(
        default=1, gt=0, alias="dcp-size", description="Decode context-parallel size."
    )
    pcp_size: int = Field(
        default=1, gt=0, alias="pcp-size", description="Prefill context-parallel size."
    )
    additional_settings: tuple[str, ...] | None = Field(
        default=None,
        alias="additional-settings",
        description="KEY=VALUE settings passed to the multinode launcher (CONFIG_FILE=..., "
        "PREFILL_NODES=...), verbatim.",
    )

    @property
    def gpus_per_replica(self) -> int:
        """GPUs one replica uses: tp x pp x pcp, where a DP-attention replica spans its
        attention ranks, ``max(tp, ep)`` (InferenceX's ``dep8`` is tp 1, ep 8, dp-attn)."""
        return self.attention_ranks * self.pp * self.pcp_size

    @property
    def attention_ranks(self) -> int:
        """Ranks of one pipeline stage: tp, or with DP attention max(tp, ep)."""
        return max(self.tp, self.ep) if self.dp_attn else self.tp


class MultinodeRow(_RowCommon):
    """One multinode search-space row: prefill and decode pools and their concurrencies."""

    prefill: Worker = Field(description="Prefill pool (the only pool when aggregated).")
    decode: Worker = Field(description="Decode pool; num-worker 0 when aggregated.")


def _row_shape(value: Any) -> str:
    # A row is multinode exactly when it names worker pools, as in InferenceX.
    if isinstance(value, dict):
        return "multinode" if "prefill" in value or "decode" in value else "single-node"
    return "multinode" if isinstance(value, MultinodeRow) else "single-node"


SearchSpaceRow = Annotated[
    Annotated[SingleNodeRow, Tag("single-node")] | Annotated[MultinodeRow, Tag("multinode")],
    Discriminator(_row_shape),
]


def _non_empty_rows(rows: tuple[SearchSpaceRow, ...]) -> tuple[SearchSpaceRow, ...]:
    # A field validator (not min_length) so that an invalid row is reported alone.
    if not rows:
        raise ValueError("expected at least one search-space row")
    return rows


class FixedSeqLen(StrictModel):
    """Random prompts of a fixed input/output length (vllm bench serve ``random``)."""

    isl: int = Field(gt=0, description="Input sequence length, tokens.")
    osl: int = Field(gt=0, description="Output sequence length, tokens.")
    search_space: tuple[SearchSpaceRow, ...] = Field(
        alias="search-space", description="Rows to sweep at this ISL/OSL (at least one)."
    )

    _non_empty = field_validator("search_space")(_non_empty_rows)


class AgenticCoding(StrictModel):
    """Multi-turn agentic-coding trace replay for a fixed duration."""

    dram_utilization: float | None = Field(
        default=None,
        gt=0,
        le=1,
        alias="dram-utilization",
        description="Fraction of the node's (capped) CPU DRAM a kv-offloading: dram arm may use.",
    )
    trace: str | None = Field(
        default=None, description="Trace dataset name or path; None = the client's default trace."
    )
    duration: int = Field(
        default=3600, gt=0, description="Replay duration per concurrency point, seconds."
    )
    search_space: tuple[SearchSpaceRow, ...] = Field(
        alias="search-space", description="Rows to sweep (at least one)."
    )

    _non_empty = field_validator("search_space")(_non_empty_rows)


ScenarioKind = Literal["fixed-seq-len", "agentic-coding"]


class Scenarios(StrictModel):
    """All scenarios of a recipe; at least one block overall."""

    fixed_seq_len: tuple[FixedSeqLen, ...] = Field(
        default=(), alias="fixed-seq-len", description="Fixed ISL/OSL blocks."
    )
    agentic_coding: tuple[AgenticCoding, ...] = Field(
        default=(), alias="agentic-coding", description="Agentic-coding trace-replay blocks."
    )

    @model_validator(mode="after")
    def _not_empty(self) -> Scenarios:
        if not self.fixed_seq_len and not self.agentic_coding:
            raise ValueError("expected at least one fixed-seq-len or agentic-coding block")
        return self

    def rows(self) -> tuple[SingleNodeRow | MultinodeRow, ...]:
        """Every search-space row of every block, in document order."""
        blocks: tuple[FixedSeqLen | AgenticCoding, ...] = (
            *self.fixed_seq_len,
            *self.agentic_coding,
        )
        return tuple(row for block in blocks for row in block.search_space)
