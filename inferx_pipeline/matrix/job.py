"""``BenchmarkJob``: one fully resolved point of the matrix (recipe x scenario x row x conc).

Every value a launcher, an engine adapter or the client needs is resolved here; nothing
is left to a default somewhere else. Fields, grouped:

Identity
    ``job_id``       readable, unique: ``<recipe>/<scenario>[-<isl>x<osl>]/<layout>/c<conc>``
                     (``/eval`` appended for eval jobs).
    ``fingerprint``  sha256 hex of the canonical JSON of every result-changing field except
                     concurrency (so not: recipe id/path, job id, exp-name, conc, max-num-seqs
                     as resolved for this conc; yes: the max-num-seqs *rule*).
    ``server_key``   identity of the server the job runs on (= fingerprint): jobs that share
                     it share one server, started once for all their concurrencies.
    ``recipe_id``, ``recipe_path``  where the job came from (not in the fingerprint).
Partition keys
    ``sku`` (catalog SKU id), ``conc`` (client concurrency).
Model
    ``model``: ``hf_id``, ``family`` (InferenceX model-prefix), ``precision``,
    ``kv_cache_dtype``, ``thinking`` (the served mode: the recipe's, ``on`` for an
    always-thinking family left unset, None for families without a mode).
Engine
    ``engine``: ``framework`` (InferenceX framework name), ``image``, ``args`` (the
    recipe's server args, verbatim), ``env``, ``max_num_seqs_rule`` (fixed int, rule, or
    None), ``gpu_memory_utilization``, ``cudagraph_capture_sizes``; the job's resolved
    ``max_num_seqs`` (for this conc) and ``max_model_len`` are top-level. ``image_track``:
    the recipe's ``engine.track`` rule (which new tags of the image the recipe follows);
    not in the fingerprint, since following a tag changes no measurement.
Speculative decoding
    ``spec``: ``arm`` (the search-space row's InferenceX label: none | mtp | ...),
    ``method``, ``draft_model``, ``draft_tokens``, ``topk``, ``verify_tokens``,
    ``acceptance`` (synthetic | real | none), ``curve``, ``target_al`` (the golden AL,
    resolved from the curve for synthetic acceptance; None otherwise), ``options``.
Workload
    ``scenario`` (fixed-seq-len | agentic-coding); fixed: ``isl``, ``osl``,
    ``max_model_len = isl + osl + 256`` (an eval job's: raised to its eval's max-length,
    ``matrix/evals.py``); agentic: ``trace``, ``duration_s``,
    ``kv_offloading`` (none | dram), ``kv_offload_backend``, ``dram_utilization``,
    ``total_cpu_dram_gb`` (InferenceX's budget formula; 0 without DRAM offload).
Topology
    single-node: ``parallel`` (tp, ep, dp_attn, pp, dcp_size, pcp_size);
    multinode: ``workers`` (prefill and decode pools, verbatim from the row) with
    ``multinode`` and ``disagg`` flags. ``gpus`` = GPUs of one server (tp x pp x pcp;
    multinode: all replicas of both pools). ``router``, ``kv_p2p_transfer``.
Client and eval
    ``client``: api (chat | completions) and chat_template_kwargs, resolved from the
    thinking mode. ``run_eval``: True for accuracy-eval jobs (real acceptance, the eval
    max-num-seqs). ``exp_name``: InferenceX's experiment name for the row.

Adapters treat one server group's highest-concurrency job as the spec for the whole
group (max-num-seqs rules grow with concurrency).
"""

from __future__ import annotations

import hashlib
import math
from functools import cached_property
from typing import Literal

import orjson
from pydantic import Field, computed_field

from inferx_pipeline.images.tracking import TrackRule
from inferx_pipeline.recipes.scenarios import Component, ScenarioKind, Worker
from inferx_pipeline.strict import FrozenModel

ArgValue = str | int | float | bool | list[str | int | float] | None

# Fields that identify where a job came from, or vary with concurrency: not in the fingerprint.
# image_track says which other tags to run later; it changes nothing about this measurement.
_NOT_FINGERPRINTED: frozenset[str] = frozenset(
    {"recipe_id", "recipe_path", "conc", "max_num_seqs", "exp_name", "label", "image_track"}
)
# InferenceX's headroom over isl + osl for --max-model-len (fixed-seq-len).
MAX_MODEL_LEN_HEADROOM = 256


def throughput_max_model_len(isl: int | None, osl: int | None) -> int | None:
    """A throughput server's context, tokens: isl + osl + 256 (fixed-seq-len, as InferenceX
    runs it); None (agentic: the engine's own, the model's native context) otherwise."""
    if isl is None or osl is None:
        return None
    return isl + osl + MAX_MODEL_LEN_HEADROOM


class JobModel(FrozenModel):
    """The checkpoint a job serves."""

    hf_id: str = Field(description="Hugging Face model id.")
    family: str = Field(description="Model family (InferenceX model-prefix).")
    precision: str = Field(description="Checkpoint weight precision.")
    kv_cache_dtype: str = Field(description="KV-cache dtype; auto = the engine default.")
    thinking: Literal["on", "off"] | None = Field(
        description="Served thinking mode (always-thinking families: on); None = no mode."
    )


class MaxNumSeqsRuleJob(FrozenModel):
    """The recipe's max-num-seqs rule, copied: max(floor, ceil(per_conc x conc)); eval fixed."""

    per_conc: float = Field(description="Sequences per unit of concurrency.")
    floor: int | None = Field(description="Lower bound, sequences.")
    eval: int | None = Field(description="Fixed value for eval jobs; None = the rule.")


def resolve_max_num_seqs(
    rule: int | MaxNumSeqsRuleJob | None, conc: int, *, is_eval: bool = False
) -> int | None:
    """max-num-seqs for a job at ``conc``: the fixed value, the rule's, or None (default)."""
    if rule is None or isinstance(rule, int):
        return rule
    if is_eval and rule.eval is not None:
        return rule.eval
    value = math.ceil(rule.per_conc * conc)
    return max(value, rule.floor) if rule.floor is not None else value


class JobEngine(FrozenModel):
    """The serving engine, as the recipe gave it."""

    framework: str = Field(description="InferenceX framework name, e.g. vllm, sglang-disagg.")
    image: str = Field(description="Container image reference.")
    args: dict[str, ArgValue] | tuple[str, ...] = Field(
        description="Recipe server args: flag -> value mapping or a literal argv tuple."
    )
    env: dict[str, str] = Field(description="Server environment from the recipe.")
    max_num_seqs_rule: int | MaxNumSeqsRuleJob | None = Field(
        description="Fixed max-num-seqs, a rule, or None (engine default)."
    )
    gpu_memory_utilization: float | None = Field(description="HBM fraction; None = default.")
    cudagraph_capture_sizes: tuple[int, ...] | Literal["up-to-max-num-seqs"] | None = Field(
        description="CUDA-graph capture sizes, the rule name, or None (engine default)."
    )


class JobSpec(FrozenModel):
    """Speculative decoding, resolved."""

    arm: str = Field(description="The row's spec-decoding label (InferenceX), none = off.")
    method: str = Field(description="Method (mtp, eagle, eagle3, dspark, draft_model, none).")
    draft_model: str | None = Field(description="Draft checkpoint HF id, if separate.")
    draft_tokens: int | None = Field(description="Draft tokens per step.")
    topk: int | None = Field(description="SGLang eagle top-k.")
    verify_tokens: int | None = Field(description="SGLang tokens verified per step.")
    acceptance: Literal["synthetic", "real", "none"] = Field(
        description="synthetic = engine accepts at target_al; real = model decides; none = off."
    )
    curve: str | None = Field(description="Golden curve name (synthetic acceptance).")
    target_al: float | None = Field(description="Golden acceptance length (synthetic only).")
    options: dict[str, str | int | float | bool] = Field(description="Extra method options.")


class JobParallel(FrozenModel):
    """Single-node parallel layout."""

    tp: int
    ep: int
    dp_attn: bool
    pp: int
    dcp_size: int
    pcp_size: int


class JobWorkers(FrozenModel):
    """Multinode worker pools, verbatim from the search-space row."""

    prefill: Worker
    decode: Worker


class JobClient(FrozenModel):
    """How the load generator talks to the server."""

    api: Literal["chat", "completions"]
    chat_template_kwargs: dict[str, str | int | float | bool]


class BenchmarkJob(FrozenModel):
    """One matrix point; see the module docstring for every field. Built only by ``expand``."""

    recipe_id: str
    recipe_path: str = Field(description="Recipe file the job came from ('' if in memory).")
    label: str = Field(description="Readable layout part of the job id, e.g. tp8-ep8-dpa.")
    sku: str = Field(description="Partition key: catalog SKU id.")
    runner: str = Field(description="InferenceX runner label.")
    model: JobModel
    engine: JobEngine
    image_track: TrackRule | None = Field(
        description="Tags of the image's repository the recipe follows; None = pinned only."
    )
    spec: JobSpec
    scenario: ScenarioKind
    isl: int | None = Field(description="Input tokens (fixed-seq-len).")
    osl: int | None = Field(description="Output tokens (fixed-seq-len).")
    max_model_len: int | None = Field(
        description="isl + osl + 256 (fixed-seq-len; eval jobs: at least the eval's "
        "max-length); None = the engine's own."
    )
    trace: str | None = Field(description="Agentic trace; None = the client's default.")
    duration_s: int | None = Field(description="Agentic replay duration per point, seconds.")
    kv_offloading: Literal["none", "dram"] | None = Field(description="Agentic KV offload arm.")
    kv_offload_backend: Component | None
    dram_utilization: float | None
    total_cpu_dram_gb: int | None = Field(description="Agentic DRAM budget, GB (1e9 bytes).")
    multinode: bool
    disagg: bool
    parallel: JobParallel | None = Field(description="Single-node layout; None if multinode.")
    workers: JobWorkers | None = Field(description="Multinode pools; None if single-node.")
    gpus: int = Field(description="GPUs of one server.")
    router: Component | None
    kv_p2p_transfer: str | None
    client: JobClient
    run_eval: bool = Field(description="Accuracy-eval job (real acceptance).")
    conc: int = Field(gt=0, description="Partition key: client concurrency.")
    max_num_seqs: int | None = Field(description="Resolved for this conc; None = default.")
    exp_name: str = Field(description="InferenceX experiment name.")

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented computed_field idiom
    @cached_property
    def fingerprint(self) -> str:
        """sha256 hex of the canonical JSON of every result-changing field except conc."""
        doc = self.model_dump(mode="json", exclude=set(_NOT_FINGERPRINTED) | {"fingerprint"})
        canonical = orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
        return hashlib.sha256(canonical).hexdigest()

    @property
    def server_key(self) -> str:
        """Identity of the server this job runs on (concurrency excluded)."""
        return self.fingerprint

    @property
    def scenario_label(self) -> str:
        """``fixed-seq-len-8192x1024`` or ``agentic-coding``."""
        if self.isl is not None and self.osl is not None:
            return f"{self.scenario}-{self.isl}x{self.osl}"
        return self.scenario

    def evolve(self, **changes: object) -> BenchmarkJob:
        """A new job with ``changes`` applied (fingerprint recomputed, unlike model_copy)."""
        fields = {name: getattr(self, name) for name in type(self).model_fields}
        return type(self)(**{**fields, **changes})

    @property
    def job_id(self) -> str:
        """``<recipe>/<scenario>/<layout>/c<conc>``, with ``/eval`` for eval jobs."""
        suffix = "/eval" if self.run_eval else ""
        return f"{self.recipe_id}/{self.scenario_label}/{self.label}/c{self.conc}{suffix}"
