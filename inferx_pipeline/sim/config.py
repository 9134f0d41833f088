"""What one simulated server is: SKU x model x parallelism x engine limits x failure knobs,
and what it answers (filler words, or an answer key's answers).

``SimConfig`` is the single input of the simulator; ``inferx sim serve`` flags map onto
its fields one to one (kebab-case flag = snake_case field).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

from pydantic import Field, model_validator

from inferx_pipeline.strict import StrictModel

SpecMethod = Literal["none", "mtp", "eagle", "eagle3", "dspark", "draft_model", "ngram"]
SPEC_METHODS: tuple[str, ...] = get_args(SpecMethod)
Role = Literal["aggregated", "prefill", "decode"]
ROLES: tuple[str, ...] = get_args(Role)
# The environment variable the commands' ``--time-scale`` reads when the flag is absent.
SIM_TIME_SCALE_ENV = "INFERX_SIM_TIME_SCALE"


class SimConfig(StrictModel):
    """One simulated OpenAI-compatible server; every duration is in seconds."""

    host: str = Field(default="127.0.0.1", description="Interface to bind (loopback by default).")
    port: int = Field(default=0, ge=0, le=65535, description="0 = any free port.")
    sku: str = Field(description="Catalog SKU id, e.g. h200.")
    model_family: str = Field(description="Catalog model key, e.g. qwen3.8-27b.")
    precision: str = Field(default="bf16", description="Weight precision, e.g. fp8, fp4.")
    kv_dtype: str = Field(default="bf16", description="KV-cache element dtype, e.g. fp8.")
    tp: int = Field(default=1, ge=1, description="Tensor-parallel GPUs (the server's GPU count).")
    ep: int = Field(
        default=1,
        ge=1,
        description="Expert-parallel size; accepted for vLLM parity: experts split over the "
        "TP GPUs either way, so it does not change the roofline.",
    )
    dp_attn: bool = Field(default=False, description="Data-parallel attention: KV sharded by tp.")
    served_model_name: str | None = Field(
        default=None, description="Name in /v1/models; default the model family."
    )
    engine: str = Field(
        default="vllm", description="Efficiency profile in catalog/sim-efficiency.yaml."
    )
    max_num_seqs: int = Field(default=256, ge=1, description="Running-batch cap (sequences).")
    max_model_len: int | None = Field(
        default=None, ge=16, description="Context cap (tokens); default min(131072, KV capacity)."
    )
    max_num_batched_tokens: int = Field(
        default=8192, ge=16, description="Tokens per step (prefill chunks + decodes)."
    )
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    spec_method: SpecMethod = Field(default="none", description="Speculative decoding method.")
    num_speculative_tokens: int = Field(default=0, ge=0, le=16, description="Draft tokens k.")
    acceptance_length: float | None = Field(
        default=None, ge=1, description="Target AL = mean(accepted + 1) per verify step."
    )
    load_time_s: float = Field(default=3.0, ge=0, description="Simulated model load (health 503).")
    error_rate: float = Field(default=0.0, ge=0, le=1, description="Fraction answered HTTP 500.")
    crash_after_tokens: int | None = Field(
        default=None, ge=1, description="Engine dies after this many generated tokens in all."
    )
    seed: int = Field(default=0, description="Seeds acceptance draws, errors and output words.")
    catalog_dir: Path = Field(description="Directory with skus.yaml, models.yaml, sim-*.yaml.")
    time_scale: float = Field(
        default=1.0, gt=0, description="Multiplies every simulated duration (tests run fast)."
    )
    answer_key: Path | None = Field(
        default=None,
        description="JSONL of {question, answer} (GSM8K's format): a prompt asking one of its "
        "questions is answered with the last line of its answer (sim/answers.py); default "
        "none: every answer is filler words.",
    )
    answer_share: float = Field(
        default=1.0,
        ge=0,
        le=1,
        description="Share of the answer key's questions answered right, spread evenly in "
        "file order (0.5: every second); the rest get filler words.",
    )

    role: Role = Field(
        default="aggregated",
        description="Disaggregation role: prefill publishes each prompt's KV on the bootstrap "
        "port, decode fetches it (sim/disagg.py); a request without the routers' fields is "
        "served whole in every role.",
    )
    bootstrap_port: int | None = Field(
        default=None,
        ge=0,
        le=65535,
        description="Prefill role: port of its KV bootstrap HTTP server on --host (0 = any).",
    )
    nnodes: int = Field(default=1, ge=1, description="Nodes one worker spans (--tp covers all).")
    node_rank: int = Field(default=0, ge=0, description="This process's node; 0 serves HTTP.")
    master_addr: str | None = Field(
        default=None, description="Rank 0's address; ranks > 0 join its rendezvous there."
    )
    master_port: int | None = Field(
        default=None, ge=0, le=65535, description="Rank 0's rendezvous TCP port (on --host)."
    )

    @model_validator(mode="after")
    def _roles_are_complete(self) -> SimConfig:
        if self.role == "prefill" and self.bootstrap_port is None:
            raise ValueError("role prefill needs --bootstrap-port (its KV bootstrap server)")
        if self.role != "prefill" and self.bootstrap_port is not None:
            raise ValueError(f"bootstrap_port given with role {self.role}; only prefill serves KV")
        return self

    @model_validator(mode="after")
    def _nodes_are_complete(self) -> SimConfig:
        if self.node_rank >= self.nnodes:
            raise ValueError(f"node_rank {self.node_rank} is not below nnodes {self.nnodes}")
        if self.nnodes > 1 and self.master_port is None:
            raise ValueError(f"nnodes {self.nnodes} needs --master-port (rank 0's rendezvous)")
        if self.node_rank > 0 and self.master_addr is None:
            raise ValueError(f"node_rank {self.node_rank} needs --master-addr (rank 0's address)")
        return self

    @model_validator(mode="after")
    def _answer_share_has_a_key(self) -> SimConfig:
        if self.answer_key is None and self.answer_share != 1.0:
            raise ValueError("answer_share given without answer_key; set --answer-key FILE")
        return self

    @model_validator(mode="after")
    def _speculation_is_complete(self) -> SimConfig:
        if self.spec_method == "none":
            if self.num_speculative_tokens or self.acceptance_length is not None:
                raise ValueError(
                    "num_speculative_tokens/acceptance_length given with spec_method none; "
                    "set --spec-method or drop them"
                )
            return self
        if self.num_speculative_tokens < 1 or self.acceptance_length is None:
            raise ValueError(
                f"spec_method {self.spec_method} needs --num-speculative-tokens >= 1 "
                "and --acceptance-length"
            )
        if self.acceptance_length > self.num_speculative_tokens + 1:
            raise ValueError(
                f"acceptance_length {self.acceptance_length} exceeds num_speculative_tokens + 1 "
                f"= {self.num_speculative_tokens + 1}; expected 1 <= AL <= k + 1"
            )
        return self

    @property
    def model_name(self) -> str:
        """The ``model`` the server answers to."""
        return self.served_model_name or self.model_family

    @property
    def draft_tokens(self) -> int:
        """k, or 0 without speculative decoding."""
        return self.num_speculative_tokens if self.spec_method != "none" else 0
