"""RawResult: the JSON one benchmark run writes (a superset of ``vllm bench serve`` keys).

The results layer reads it back with ``RawResult.model_validate_json``; keys are the
contract, so renaming one is a schema change (bump ``SCHEMA_VERSION``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from inferx_pipeline.strict import StrictModel

# 2: num_prompts is what was measured (a point runs to min_duration_s; the planned count
# is dataset.num_prompts); min_duration_s added.
SCHEMA_VERSION = 2
Status = Literal["ok", "failed", "incomplete"]
MetadataValue = str | int | float | bool


class ClientInfo(StrictModel):
    """How the measuring client itself fared (a saturated client inflates latencies)."""

    version: str
    processes: int = Field(ge=1)
    event_loop_lag_p99_ms: float = Field(ge=0, description="Worst shard's p99 loop lag, ms.")
    cpu_percent: float = Field(ge=0, description="Worst shard's CPU use, % of one core.")


class DatasetInfo(StrictModel):
    """What was sent: enough to regenerate the same requests."""

    kind: Literal["random", "prefix-repetition", "agentic"]
    input_len: int | None = None
    output_len: int | None = None
    range_ratio: float | None = None
    prefix_len: int | None = None
    num_prefixes: int | None = None
    seed: int
    num_prompts: int = Field(
        description="Planned: the least sent (sessions for agentic); requests past it are "
        "drawn by index from the same seed (a point extended to its minimum duration)."
    )
    warmup: int
    trace: str | None = Field(default=None, description="Agentic trace path or name.")


class Acceptance(StrictModel):
    """Speculative decoding realized on the server, from ``/metrics`` counter deltas."""

    drafts: float
    draft_tokens: float
    accepted_tokens: float
    acceptance_length: float = Field(description="1 + accepted_tokens / drafts.")


class TurnStats(StrictModel):
    """Statistics of the n-th turn over all sessions that reached it."""

    turn: int
    requests: int
    mean_input_len: float
    mean_output_len: float
    mean_ttft_ms: float | None
    mean_e2el_ms: float | None
    p90_e2el_ms: float | None


class SessionStats(StrictModel):
    """One replayed session end to end (think time included in ``duration_s``)."""

    session_id: str
    turns: int
    completed_turns: int
    duration_s: float
    output_tokens: int
    mean_ttft_ms: float | None
    mean_e2el_ms: float | None


class AgenticSummary(StrictModel):
    """Multi-turn replay metrics; E2E interactivity is AgentX's axis."""

    sessions: int
    turns: int
    per_turn: list[TurnStats]
    per_session: list[SessionStats]
    p90_e2el_per_output_token_ms: float | None
    e2e_interactivity: float | None = Field(description="1000 / p90 E2EL-per-token ms.")


class RawResult(StrictModel):
    """One benchmark run at one load point. Latencies in ms unless the key says otherwise.

    Percentile keys are null (and listed in ``not_significant``) when too few samples
    were measured for that percentile to mean anything.
    """

    # vllm bench serve --save-result keys
    date: str = Field(description="Local time the run ended, %Y%m%d-%H%M%S.")
    backend: Literal["openai-chat", "vllm"]
    model_id: str
    tokenizer_id: str
    num_prompts: int = Field(
        description="Measured: prompts sent (sessions for agentic), the planned count "
        "(dataset.num_prompts) or more to last min_duration_s."
    )
    request_rate: float | Literal["inf"]
    burstiness: float
    max_concurrency: int | None
    duration: float = Field(description="Seconds from the first request sent to the last done.")
    completed: int
    failed: int
    total_input_tokens: int
    total_output_tokens: int
    request_throughput: float = Field(description="Completed requests per second.")
    output_throughput: float = Field(description="Output tokens per second.")
    total_token_throughput: float = Field(description="Input + output tokens per second.")
    max_output_tokens_per_s: float
    max_concurrent_requests: int
    input_lens: list[int]
    output_lens: list[int]
    ttfts: list[float] = Field(description="Seconds; 0.0 for failed requests.")
    itls: list[list[float]] = Field(description="Per-request inter-chunk gaps, seconds.")
    errors: list[str] = Field(description='One per request; "" when it succeeded.')
    generated_texts: list[str]
    mean_ttft_ms: float | None = None
    median_ttft_ms: float | None = None
    std_ttft_ms: float | None = None
    p50_ttft_ms: float | None = None
    p90_ttft_ms: float | None = None
    p95_ttft_ms: float | None = None
    p99_ttft_ms: float | None = None
    p99_9_ttft_ms: float | None = Field(default=None, alias="p99.9_ttft_ms")
    mean_tpot_ms: float | None = None
    median_tpot_ms: float | None = None
    std_tpot_ms: float | None = None
    p50_tpot_ms: float | None = None
    p90_tpot_ms: float | None = None
    p95_tpot_ms: float | None = None
    p99_tpot_ms: float | None = None
    p99_9_tpot_ms: float | None = Field(default=None, alias="p99.9_tpot_ms")
    mean_itl_ms: float | None = None
    median_itl_ms: float | None = None
    std_itl_ms: float | None = None
    p50_itl_ms: float | None = None
    p90_itl_ms: float | None = None
    p95_itl_ms: float | None = None
    p99_itl_ms: float | None = None
    p99_9_itl_ms: float | None = Field(default=None, alias="p99.9_itl_ms")
    mean_e2el_ms: float | None = None
    median_e2el_ms: float | None = None
    std_e2el_ms: float | None = None
    p50_e2el_ms: float | None = None
    p90_e2el_ms: float | None = None
    p95_e2el_ms: float | None = None
    p99_e2el_ms: float | None = None
    p99_9_e2el_ms: float | None = Field(default=None, alias="p99.9_e2el_ms")
    # interactivity = 1000 / TPOT ms at that statistic, tok/s/user
    mean_intvty: float | None = None
    median_intvty: float | None = None
    p90_intvty: float | None = None
    p99_intvty: float | None = None
    # inferx provenance
    schema_version: int = SCHEMA_VERSION
    status: Status
    stop_reason: Literal["deadline", "interrupted"] | None = Field(
        default=None, description="Why an incomplete run stopped early."
    )
    min_duration_s: float | None = Field(
        default=None,
        description="The client kept issuing requests until this many seconds passed, s "
        "(null in schema 1 results).",
    )
    valid: bool
    invalid_reasons: list[str]
    not_significant: list[str]
    client_saturated: bool
    client_contended: bool = Field(
        default=False,
        description="The client's loop ran late while its own CPU was low: another process "
        "(a CPU engine on the same host) shares its cores; latencies include that delay.",
    )
    client: ClientInfo
    endpoint: str
    api: Literal["chat", "completions"]
    dataset: DatasetInfo
    seed: int
    started_at: float = Field(description="Unix seconds.")
    finished_at: float = Field(description="Unix seconds.")
    measured_isl_mean: float | None
    measured_osl_mean: float | None
    acceptance: Acceptance | None
    agentic: AgenticSummary | None
    metadata: dict[str, MetadataValue]

    def to_json(self) -> str:
        """The artifact text (aliased keys such as ``p99.9_ttft_ms``)."""
        return self.model_dump_json(by_alias=True, indent=2)
