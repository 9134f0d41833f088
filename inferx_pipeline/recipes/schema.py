"""The recipe format: one pydantic model per block, the ``Recipe`` at the top.

A recipe is a superset of one InferenceX master-config entry (``image``, ``model``,
``model-prefix``, ``runner``, ``precision``, ``framework``, ``multinode``, ``disagg``,
``router``, ``kv-p2p-transfer``, ``scenarios``) plus what InferenceX keeps in bash: the
KV-cache dtype and thinking mode, the engine's server arguments and environment, the
max-num-seqs sizing rule, speculative-decoding details with the golden curve's name, and
the eval policy. Keys are kebab-case; unknown keys are errors. Everything here is data
the author writes: nothing is computed (the matrix derives max-model-len, the resolved
golden AL, max-num-seqs per concurrency).

Public API: ``Recipe`` (and its blocks ``ModelSpec``, ``EngineSpec``, ``Speculative``,
``EvalPolicy``, ``ClientSpec``, ``MaxNumSeqsRule``, ``ImportedFrom``),
``recipe_json_schema()``.

``extends:`` is resolved by the loader before validation, so it is not a field; the
JSON Schema adds it so editors accept it.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, Self

from pydantic import BeforeValidator, Field, model_validator

from inferx_pipeline.envnames import EnvName
from inferx_pipeline.images.tracking import TrackRule
from inferx_pipeline.recipes.scenarios import Component, Scenarios
from inferx_pipeline.strict import StrictModel

Framework = Literal[
    "vllm",
    "sglang",
    "trt",
    "atom",
    "sim",
    "sglang-disagg",
    "atom-disagg",
    "dynamo-sglang",
    "dynamo-trt",
    "dynamo-vllm",
    "llmd-vllm",
    "tilert",
]
Precision = Literal["bf16", "fp16", "fp8", "mxfp8", "fp4", "mxfp4", "nvfp4"]
KvCacheDtype = Literal["auto", "bf16", "fp16", "fp8", "fp4"]
Thinking = Literal["on", "off"]
SpecMethod = Literal["mtp", "eagle", "eagle3", "dspark", "draft_model", "ngram", "none"]
Acceptance = Literal["synthetic", "real"]
ArgValue = str | int | float | bool | list[str | int | float]

# Methods that run a separate draft checkpoint (mtp and SGLang eagle use the model's own head).
DRAFT_CHECKPOINT_METHODS: frozenset[str] = frozenset({"eagle3", "dspark", "draft_model"})


def _env_strings(value: object) -> object:
    # YAML reads `SGLANG_ENABLE_SPEC_V2: 1` as an int; env values are strings. Booleans
    # stay as they are so the string check rejects them (true vs "1" vs "True" is ambiguous).
    if isinstance(value, dict):
        return {
            k: str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v
            for k, v in value.items()
        }
    return value


EnvMap = Annotated[
    dict[EnvName, str],
    BeforeValidator(_env_strings, json_schema_input_type=dict[str, str | int | float]),
]


class ModelSpec(StrictModel):
    """The checkpoint served: which weights, at which precision, in which thinking mode."""

    hf_id: str = Field(
        alias="hf-id",
        min_length=1,
        description="Hugging Face model id (InferenceX `model`), e.g. Qwen/Qwen3.8-27B-FP8.",
    )
    family: str = Field(
        alias="model-prefix",
        min_length=1,
        description="Model family key in catalog/models.yaml (InferenceX `model-prefix`).",
    )
    precision: Precision = Field(
        description="Checkpoint weight precision (InferenceX `precision`)."
    )
    kv_cache_dtype: KvCacheDtype = Field(
        default="auto",
        alias="kv-cache-dtype",
        description="KV-cache element dtype; auto = the engine default (the model dtype, bf16).",
    )
    thinking: Thinking | None = Field(
        default=None,
        description=(
            "Thinking (reasoning) mode: on | off. Required for families whose catalog entry "
            "says thinking: switchable; omit for families without one."
        ),
    )


class MaxNumSeqsRule(StrictModel):
    """max-num-seqs derived from each job's concurrency: max(floor, per-conc x conc)."""

    per_conc: float = Field(
        alias="per-conc", gt=0, description="Sequences per unit of client concurrency."
    )
    floor: int | None = Field(
        default=None, ge=1, description="Lower bound in sequences; none = no lower bound."
    )
    eval: int | None = Field(
        default=None, ge=1, description="Fixed value for accuracy-eval jobs; none = the rule."
    )

    def for_conc(self, conc: int, *, is_eval: bool = False) -> int:
        """max-num-seqs for a job at client concurrency ``conc`` (sequences)."""
        if is_eval and self.eval is not None:
            return self.eval
        value = math.ceil(self.per_conc * conc)
        return max(value, self.floor) if self.floor is not None else value


class EngineSpec(StrictModel):
    """The serving engine: framework, image, its command-line arguments and environment."""

    framework: Framework = Field(description="Engine kind (InferenceX `framework`).")
    image: str = Field(
        min_length=1,
        pattern=r"^\S+$",
        description="Container image reference repository:tag (InferenceX `image`).",
    )
    track: TrackRule | None = Field(
        default=None,
        description=(
            "New tags of the image's repository this recipe follows besides the pinned one: "
            "{tags: [fnmatch globs], newer-than-pinned: bool}; none = the pinned image only. "
            "Sensors and backfills read it; a job's fingerprint does not."
        ),
    )
    args: dict[str, ArgValue | None] | list[str] = Field(
        default_factory=dict,
        description=(
            "Extra server arguments: a mapping flag -> value (true = bare flag, false or null "
            "= omitted, a list = repeated values) or a literal argv list."
        ),
    )
    env: EnvMap = Field(
        default_factory=dict, description="Environment variables for the server (strings)."
    )
    max_num_seqs: int | MaxNumSeqsRule | None = Field(
        default=None,
        alias="max-num-seqs",
        description=(
            "Scheduler batch limit: a fixed number, or a rule {per-conc, floor, eval} sized to "
            "each job's concurrency; none = the engine default."
        ),
    )
    gpu_memory_utilization: float | None = Field(
        default=None,
        alias="gpu-memory-utilization",
        gt=0,
        le=1,
        description=(
            "Fraction of HBM the engine may use (vLLM --gpu-memory-utilization, SGLang "
            "--mem-fraction-static); none = the engine default from catalog/policy.yaml."
        ),
    )
    cudagraph_capture_sizes: (
        list[Annotated[int, Field(ge=1)]] | Literal["up-to-max-num-seqs"] | None
    ) = Field(
        default=None,
        alias="cudagraph-capture-sizes",
        description=(
            "CUDA-graph batch sizes: a list, or up-to-max-num-seqs (powers of two up to and "
            "including the job's max-num-seqs); none = the engine default."
        ),
    )

    @model_validator(mode="after")
    def _args_flags(self) -> Self:
        if isinstance(self.args, dict):
            for flag in self.args:
                if not flag.startswith("-"):
                    raise ValueError(f"args key {flag!r} must be a flag starting with '-'")
        return self


class Speculative(StrictModel):
    """Speculative decoding: the method, its draft, and where the acceptance length comes from.

    There is no literal acceptance-length field: a synthetic run names a golden curve and
    the matrix resolves the AL for (curve, thinking mode, draft tokens).
    """

    method: SpecMethod = Field(default="none", description="Speculative-decoding method.")
    draft_model: str | None = Field(
        default=None,
        alias="draft-model",
        description="Draft checkpoint HF id (required for eagle3, dspark, draft_model).",
    )
    draft_tokens: int | None = Field(
        default=None,
        alias="draft-tokens",
        ge=1,
        le=16,
        description=(
            "Tokens proposed per verify step (vLLM num_speculative_tokens, SGLang "
            "--speculative-num-steps); the golden curve is keyed by it. Required for "
            "synthetic acceptance; none = the engine's default (real acceptance only)."
        ),
    )
    topk: int | None = Field(
        default=None, ge=1, description="SGLang --speculative-eagle-topk (draft tree width)."
    )
    verify_tokens: int | None = Field(
        default=None,
        alias="verify-tokens",
        ge=1,
        description="SGLang --speculative-num-draft-tokens (tokens verified per step).",
    )
    acceptance: Acceptance = Field(
        default="real",
        description=(
            "synthetic = the engine accepts drafts at the golden AL; real = the model decides. "
            "Eval jobs always use real acceptance."
        ),
    )
    curve: str | None = Field(
        default=None,
        description="Golden curve name: a file stem under golden_al_distribution/.",
    )
    options: dict[str, str | int | float | bool] = Field(
        default_factory=dict,
        description="Extra method options (e.g. vLLM speculative-config draft_sample_method).",
    )

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.method == "none":
            if self.acceptance == "synthetic" or self.draft_tokens is not None:
                raise ValueError("method none takes no draft-tokens and no synthetic acceptance")
            return self
        if self.method in DRAFT_CHECKPOINT_METHODS and self.draft_model is None:
            raise ValueError(f"method {self.method} needs draft-model (the draft checkpoint)")
        if self.acceptance == "synthetic" and self.curve is None:
            raise ValueError(
                "acceptance synthetic needs curve: the name of a golden_al_distribution/ file"
            )
        if self.acceptance == "synthetic" and self.draft_tokens is None:
            raise ValueError(
                f"method {self.method} with acceptance synthetic needs draft-tokens "
                "(the golden curve is keyed by it)"
            )
        return self


class ClientSpec(StrictModel):
    """How the load generator talks to the server."""

    api: Literal["chat", "completions"] = Field(
        default="chat",
        description="chat = /v1/chat/completions through the chat template; completions = raw.",
    )
    chat_template_kwargs: dict[str, str | int | float | bool] | None = Field(
        default=None,
        alias="chat-template-kwargs",
        description="Chat-template kwargs; none = derived from the thinking mode by the adapter.",
    )


class EvalPolicy(StrictModel):
    """Which jobs of this recipe also run an accuracy eval."""

    mode: Literal["policy", "never"] = Field(
        default="policy",
        description="policy = select by the named policy; never = no eval jobs.",
    )
    policy: str = Field(
        default="default",
        min_length=1,
        description="Eval-selection policy name (catalog data; default = InferenceX's).",
    )


class ImportedFrom(StrictModel):
    """Where an imported recipe came from (written by ``inferx import-inferencex``)."""

    master: str = Field(
        min_length=1, description="InferenceX master-config file name, e.g. amd-master.yaml."
    )
    key: str = Field(min_length=1, description="The entry's config key in that file.")


class Recipe(StrictModel):
    """One benchmark recipe: a model x precision x SKU x engine [x speculative decoding]."""

    id: str = Field(
        min_length=1,
        pattern=r"^[a-z0-9][a-z0-9._-]*$",
        description="Unique recipe id (InferenceX config key), e.g. dsr1-fp8-h200-sglang.",
    )
    notes: str | None = Field(default=None, description="Free text: why this recipe looks so.")
    model: ModelSpec = Field(description="The checkpoint served.")
    sku: str = Field(min_length=1, description="GPU SKU key in catalog/skus.yaml, e.g. h200.")
    runner: str | None = Field(
        default=None, description="InferenceX runner label; none = the SKU key."
    )
    engine: EngineSpec = Field(description="The serving engine.")
    speculative: Speculative = Field(
        default_factory=Speculative, description="Speculative decoding; default none."
    )
    client: ClientSpec = Field(
        default_factory=ClientSpec, description="How the load generator talks to the server."
    )
    multinode: bool = Field(default=False, description="Spans several nodes (InferenceX).")
    disagg: bool = Field(default=False, description="Prefill/decode disaggregated (InferenceX).")
    router: Component | None = Field(default=None, description="Router in front of the workers.")
    kv_p2p_transfer: str | None = Field(
        default=None,
        alias="kv-p2p-transfer",
        description="KV transfer backend between disaggregated workers (mori, nixl, mooncake...).",
    )
    scenarios: Scenarios = Field(description="What to run: fixed-seq-len and/or agentic-coding.")
    eval: EvalPolicy = Field(
        default_factory=EvalPolicy, description="Accuracy-eval selection for this recipe."
    )
    imported_from: ImportedFrom | None = Field(
        default=None,
        alias="imported-from",
        description=(
            "Provenance of an imported InferenceX entry; inferx validate then also says "
            "which of its findings InferenceX itself accepts."
        ),
    )

    @property
    def runner_label(self) -> str:
        """The InferenceX runner label (the SKU key when none is given)."""
        return self.runner if self.runner is not None else self.sku


def recipe_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a recipe file, by alias, with ``extends`` added."""
    schema = Recipe.model_json_schema(by_alias=True, mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "inferx recipe"
    schema["properties"] = {
        "extends": {
            "description": (
                "Fragment file(s) merged under this recipe, paths relative to this file; "
                "mappings deep-merge, lists and scalars are replaced by this file's values."
            ),
            "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
        },
        **schema["properties"],
    }
    return schema
