"""The normalized result row and the identity a run supplies for it.

``ResultRecord`` is the contract between the results layer and the leaderboard: one
row per job x concurrency x image x attempt, units in the column names (seconds for
latencies, tok/s/GPU for throughput, UTC datetimes). The database table has exactly
these columns in this order (``RECORD_COLUMNS``).

``JobIdentity`` and ``RunContext`` are what the caller knows and a bench RawResult does
not: the recipe, SKU, parallelism and image of the job, and which run/attempt it was.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Literal

from pydantic import Field, field_validator, model_validator

from inferx_pipeline.strict import FrozenModel

Scenario = Literal["fixed-seq-len", "agentic-coding"]
SpecMethod = Literal["none", "mtp", "eagle", "eagle3", "dspark", "draft_model", "ngram"]
AcceptanceMode = Literal["synthetic", "real", "none"]
Thinking = Literal["on", "off", "none"]
KvOffload = Literal["none", "dram"]
Status = Literal["ok", "invalid", "failed", "incomplete"]
Source = Literal["inferx", "inferencex", "vllm-bench"]

SOURCES: tuple[Source, ...] = ("inferx", "inferencex", "vllm-bench")


class JobIdentity(FrozenModel):
    """Everything that identifies one measured point, as the sweep runner knows it.

    Defaults exist only where they mean "absent" (no pipeline parallelism, no spec
    decoding), so that foreign files (vLLM bench, InferenceX) can be imported.
    """

    recipe_id: str = Field(min_length=1, description="Recipe id, e.g. dsr1-fp8-h200-vllm.")
    fingerprint: str = Field(min_length=1, description="Job fingerprint (excludes conc).")
    job_id: str = Field(min_length=1, description="Job id within the matrix.")
    model: str = Field(min_length=1, description="Hugging Face model id.")
    model_family: str = Field(min_length=1, description="Catalog family prefix, e.g. dsr1.")
    precision: str = Field(min_length=1, description="Weight precision, e.g. fp8.")
    sku: str = Field(min_length=1, description="GPU SKU catalog key, e.g. h200.")
    vendor: str = Field(min_length=1, description="GPU vendor: nvidia | amd | none.")
    framework: str = Field(min_length=1, description="Engine: vllm, sglang, trt, atom, sim.")
    image: str = Field(min_length=1, description="Full image reference repo:tag.")
    image_digest: str | None = Field(default=None, description="sha256:... when known.")
    engine_version: str | None = Field(default=None, description="Engine version string.")
    scenario: Scenario = Field(description="fixed-seq-len | agentic-coding.")
    isl: int | None = Field(default=None, ge=1, description="Nominal input length, tokens.")
    osl: int | None = Field(default=None, ge=1, description="Nominal output length, tokens.")
    tp: int = Field(ge=1, description="Tensor parallel size.")
    ep: int = Field(default=1, ge=1, description="Expert parallel size.")
    pp: int = Field(default=1, ge=1, description="Pipeline parallel size.")
    pcp: int = Field(default=1, ge=1, description="Prefill context parallel size.")
    dp_attn: bool = Field(default=False, description="Data-parallel attention.")
    kv_offload: KvOffload = Field(default="none", description="KV-cache offload arm.")
    kv_offload_backend: str | None = Field(default=None, description="Offload backend name.")
    spec_method: SpecMethod = Field(default="none", description="Speculative decoding method.")
    draft_tokens: int = Field(default=0, ge=0, description="Draft tokens per step; 0 = none.")
    acceptance_mode: AcceptanceMode = Field(
        default="none", description="Draft acceptance: synthetic (golden curve) or real."
    )
    target_al: float | None = Field(default=None, ge=1, description="Golden acceptance length.")
    thinking: Thinking = Field(default="none", description="Thinking mode of the chat template.")
    conc: int = Field(ge=1, description="Client concurrency of this point.")
    # A multinode deployment (tp .. dp_attn above are then its decode or aggregated pool's).
    deployment: str | None = Field(
        default=None,
        description="Multinode: its workers, e.g. 'disagg 1P tp4 + 2D tp8 ep8'; None: one server.",
    )
    deployment_gpus: int | None = Field(
        default=None, ge=1, description="Multinode: GPUs of all its workers."
    )
    disagg: bool = Field(default=False, description="Prefill and decode on separate workers.")
    prefill_workers: int | None = Field(default=None, ge=0, description="Prefill workers.")
    prefill_tp: int | None = Field(default=None, ge=1, description="TP of each prefill worker.")
    prefill_ep: int | None = Field(default=None, ge=1, description="EP of each prefill worker.")
    decode_workers: int | None = Field(default=None, ge=0, description="Decode workers.")
    decode_tp: int | None = Field(default=None, ge=1, description="TP of each decode worker.")
    decode_ep: int | None = Field(default=None, ge=1, description="EP of each decode worker.")
    router: str | None = Field(default=None, description="Router in front, e.g. sglang-router.")
    kv_transfer: str | None = Field(default=None, description="KV transfer backend, e.g. nixl.")

    @property
    def gpus(self) -> int:
        """GPUs the server occupies: tp x pp x pcp, or every worker's of a deployment."""
        return self.deployment_gpus or self.tp * self.pp * self.pcp


class RunContext(FrozenModel):
    """Which run produced the artifact; with the identity it makes ``result_id``."""

    run_id: str = Field(min_length=1, description="Dagster run id, or an import id.")
    attempt: int = Field(default=1, ge=1, description="Attempt of this point within the run.")
    simulated: bool = Field(description="Measured against the simulated engine.")
    official: bool = Field(default=False, description="Real GPU run on an official image.")
    artifacts: dict[str, str] = Field(
        default_factory=dict, description="Other artifacts of the point: name -> sha256."
    )
    slurm_job_id: str | None = Field(
        default=None, description="The Slurm job (allocation) the server ran in; None off Slurm."
    )
    slurm_cluster: str | None = Field(
        default=None, description="The Slurm cluster of that job (its ClusterName)."
    )
    pr_number: int | None = Field(
        default=None, ge=1, description="The pull request an unofficial run swept; None: official."
    )
    head_sha: str | None = Field(
        default=None, description="The PR head commit the unofficial run swept."
    )
    measured_in: str | None = Field(
        default=None,
        description="The run that measured the point when this run took it over unchanged "
        "(a merge promoting a PR's point); None when this run measured it.",
    )


def image_tag(image: str) -> str:
    """The tag of ``repo[:port]/path:tag[@digest]``; ``latest`` when none is written."""
    ref = image.split("@", 1)[0]
    last = ref.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else "latest"


def result_id(identity: JobIdentity, run: RunContext) -> str:
    """sha256 hex of the canonical identity JSON plus run id and attempt."""
    payload = {
        "identity": identity.model_dump(mode="json"),
        "run_id": run.run_id,
        "attempt": run.attempt,
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


class ResultRecord(FrozenModel):
    """One normalized measurement; column names carry their units."""

    # identity
    result_id: str = Field(pattern=r"^[0-9a-f]{64}$")
    recipe_id: str
    fingerprint: str
    job_id: str
    model: str
    model_family: str
    precision: str
    sku: str
    vendor: str
    framework: str
    image: str
    image_tag: str
    image_digest: str | None
    engine_version: str | None
    scenario: Scenario
    isl: int | None
    osl: int | None
    tp: int = Field(ge=1)
    ep: int = Field(ge=1)
    pp: int = Field(ge=1)
    pcp: int = Field(ge=1)
    dp_attn: bool
    kv_offload: KvOffload
    kv_offload_backend: str | None
    spec_method: SpecMethod
    draft_tokens: int = Field(ge=0)
    acceptance_mode: AcceptanceMode
    target_al: float | None
    realized_al: float | None
    thinking: Thinking
    gpus: int = Field(ge=1)
    conc: int = Field(ge=1)
    deployment: str | None = None
    deployment_gpus: int | None = Field(default=None, ge=1)
    disagg: bool
    prefill_workers: int | None = None
    prefill_tp: int | None = None
    prefill_ep: int | None = None
    decode_workers: int | None = None
    decode_tp: int | None = None
    decode_ep: int | None = None
    router: str | None = None
    kv_transfer: str | None = None
    # measurement: tok/s/GPU, req/s, seconds, tok/s/user; null where the source lacks it
    tput_per_gpu: float = Field(ge=0, allow_inf_nan=False)
    input_tput_per_gpu: float = Field(ge=0, allow_inf_nan=False)
    output_tput_per_gpu: float = Field(ge=0, allow_inf_nan=False)
    request_throughput: float | None = Field(ge=0, allow_inf_nan=False)
    ttft_mean_s: float | None = Field(ge=0, allow_inf_nan=False)
    ttft_median_s: float | None = Field(ge=0, allow_inf_nan=False)
    ttft_p90_s: float | None = Field(ge=0, allow_inf_nan=False)
    ttft_p99_s: float | None = Field(ge=0, allow_inf_nan=False)
    tpot_mean_s: float | None = Field(ge=0, allow_inf_nan=False)
    tpot_median_s: float | None = Field(ge=0, allow_inf_nan=False)
    tpot_p90_s: float | None = Field(ge=0, allow_inf_nan=False)
    tpot_p99_s: float | None = Field(ge=0, allow_inf_nan=False)
    itl_mean_s: float | None = Field(ge=0, allow_inf_nan=False)
    itl_median_s: float | None = Field(ge=0, allow_inf_nan=False)
    itl_p90_s: float | None = Field(ge=0, allow_inf_nan=False)
    itl_p99_s: float | None = Field(ge=0, allow_inf_nan=False)
    e2el_mean_s: float | None = Field(ge=0, allow_inf_nan=False)
    e2el_median_s: float | None = Field(ge=0, allow_inf_nan=False)
    e2el_p90_s: float | None = Field(ge=0, allow_inf_nan=False)
    e2el_p99_s: float | None = Field(ge=0, allow_inf_nan=False)
    intvty_mean: float | None = Field(ge=0, allow_inf_nan=False)
    intvty_median: float | None = Field(ge=0, allow_inf_nan=False)
    intvty_p90: float | None = Field(ge=0, allow_inf_nan=False)
    intvty_p99: float | None = Field(ge=0, allow_inf_nan=False)
    success_rate: float | None = Field(ge=0, le=1)
    measured_isl: float | None = Field(ge=0, allow_inf_nan=False)
    measured_osl: float | None = Field(ge=0, allow_inf_nan=False)
    duration_s: float | None = Field(ge=0, allow_inf_nan=False)
    num_requests: int | None = Field(ge=0)
    failed_requests: int | None = Field(ge=0)
    # provenance
    run_id: str
    attempt: int = Field(ge=1)
    started_at: datetime | None
    finished_at: datetime | None
    client_version: str | None
    simulated: bool
    official: bool
    status: Status
    valid: bool
    source: Source
    artifact_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    artifacts: str = Field(description="JSON object text: artifact name -> sha256.")
    # where it ran: the Slurm allocation (None for other launchers and rows stored before)
    slurm_job_id: str | None
    slurm_cluster: str | None
    # E2E-normalized interactivity, tok/s/user: 1 / statistic of per-request E2EL per output
    # token (results.e2e_interactivity); null without per-request data and on older rows
    e2e_intvty_mean: float | None = Field(ge=0, allow_inf_nan=False)
    e2e_intvty_median: float | None = Field(ge=0, allow_inf_nan=False)
    e2e_intvty_p90: float | None = Field(ge=0, allow_inf_nan=False)
    e2e_intvty_p99: float | None = Field(ge=0, allow_inf_nan=False)
    # pull requests: an unofficial run's PR and head commit (None on official rows, which
    # are the only ones the leaderboard shows); the run that measured a promoted point
    pr_number: int | None = Field(ge=1)
    head_sha: str | None
    measured_in: str | None

    @field_validator("started_at", "finished_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        # Naive datetimes are ambiguous across hosts; every stored time is UTC.
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("datetime must be timezone-aware (UTC)")
        return value.astimezone(UTC)

    @model_validator(mode="after")
    def _consistent(self) -> ResultRecord:
        if self.deployment_gpus is not None:
            if self.gpus != self.deployment_gpus:
                raise ValueError(f"gpus={self.gpus} but deployment_gpus={self.deployment_gpus}")
        elif self.gpus != self.tp * self.pp * self.pcp:
            raise ValueError(f"gpus={self.gpus} but tp x pp x pcp = {self.tp * self.pp * self.pcp}")
        if self.image_tag != image_tag(self.image):
            raise ValueError(f"image_tag={self.image_tag!r} does not match image {self.image!r}")
        return self


RECORD_COLUMNS: tuple[str, ...] = tuple(ResultRecord.model_fields)
# The columns that say whose run a row is: a pull request's unofficial one, or a promotion.
PULL_COLUMNS: tuple[str, ...] = ("pr_number", "head_sha", "measured_in")
# The columns of a multinode deployment (revision 0011); single-node rows leave them null.
DEPLOYMENT_COLUMNS: tuple[str, ...] = (
    "deployment", "deployment_gpus", "disagg", "prefill_workers", "prefill_tp", "prefill_ep",
    "decode_workers", "decode_tp", "decode_ep", "router", "kv_transfer",
)  # fmt: skip
