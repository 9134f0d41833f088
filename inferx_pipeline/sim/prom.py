"""Prometheus metrics with vLLM V1's names, labels and histogram buckets.

One ``CollectorRegistry`` per server, so several in-process simulators never share
counters. A benchmark client reads deltas of these exactly as it would from vLLM.

Families named ``inferx_sim:*`` exist only here: the simulator's own schedule, and the
KV a disaggregated worker computed, sent or received (so a transfer shows in counters). A chunk's
*intended* time is the absolute deadline of the step that produced it; the intended ITL
and TPOT summaries are what a perfect client would measure, and ``step_lateness``
(wake-up - deadline) says how late the server itself delivered.
"""

from __future__ import annotations

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Summary,
    generate_latest,
)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_LABELS = ("model_name", "engine")

# vLLM V1 (vllm/v1/metrics/loggers.py) bucket boundaries, seconds.
TTFT_BUCKETS = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
    2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
)  # fmt: skip
ITL_BUCKETS = (
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0,
    2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
)  # fmt: skip
E2E_BUCKETS = (
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
    60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0,
)  # fmt: skip
# Sub-millisecond resolution: a healthy server wakes within ~1 ms of each deadline.
LATENESS_BUCKETS = (
    0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
)  # fmt: skip


class SimMetrics:
    """The server's metric families; the engine updates them, ``/metrics`` renders them."""

    def __init__(self, model_name: str, draft_tokens: int) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        labels = {"model_name": model_name, "engine": "0"}
        reg = self.registry

        def gauge(name: str, doc: str) -> Gauge:
            return Gauge(name, doc, _LABELS, registry=reg).labels(**labels)

        def counter(name: str, doc: str) -> Counter:
            return Counter(name, doc, _LABELS, registry=reg).labels(**labels)

        def histogram(name: str, doc: str, buckets: tuple[float, ...]) -> Histogram:
            return Histogram(name, doc, _LABELS, buckets=buckets, registry=reg).labels(**labels)

        def summary(name: str, doc: str) -> Summary:
            return Summary(name, doc, _LABELS, registry=reg).labels(**labels)

        self.running = gauge("vllm:num_requests_running", "Requests in the running batch.")
        self.waiting = gauge("vllm:num_requests_waiting", "Requests waiting for admission.")
        self.kv_usage = gauge("vllm:kv_cache_usage_perc", "KV-cache usage, 1 = full.")
        self.prompt_tokens = counter("vllm:prompt_tokens", "Prefill tokens processed.")
        self.generation_tokens = counter("vllm:generation_tokens", "Generation tokens.")
        self.preemptions = counter("vllm:num_preemptions", "Cumulative preemptions.")
        self.ttft = histogram(
            "vllm:time_to_first_token_seconds", "Time to first token.", TTFT_BUCKETS
        )
        self.itl = histogram(
            "vllm:inter_token_latency_seconds", "Inter-token latency.", ITL_BUCKETS
        )
        self.e2e = histogram(
            "vllm:e2e_request_latency_seconds", "End-to-end request latency.", E2E_BUCKETS
        )
        self.intended_itl = summary(
            "inferx_sim:intended_inter_token_latency_seconds",
            "Gaps between the deadlines of the steps that produced consecutive chunks.",
        )
        self.intended_tpot = summary(
            "inferx_sim:intended_time_per_output_token_seconds",
            "Per request: (last chunk's deadline - first's) / (output tokens - 1).",
        )
        self.step_lateness = histogram(
            "inferx_sim:step_lateness_seconds",
            "How long after its deadline each step's tokens were handed to the streams.",
            LATENESS_BUCKETS,
        )
        self.prefill_computed = counter(
            "inferx_sim:prefill_computed_tokens",
            "Prompt (and recomputed) tokens whose KV this server computed itself.",
        )
        self.kv_received_tokens = counter(
            "inferx_sim:kv_transfer_received_tokens",
            "Decode role: prompt tokens whose KV arrived from a prefill worker.",
        )
        self.kv_received_bytes = counter(
            "inferx_sim:kv_transfer_received_bytes",
            "Decode role: whole (unsharded) KV bytes received from prefill workers.",
        )
        self.kv_sent_tokens = counter(
            "inferx_sim:kv_transfer_sent_tokens",
            "Prefill role: prompt tokens whose KV a decode worker fetched.",
        )
        self.kv_transfer_seconds = counter(
            "inferx_sim:kv_transfer_seconds",
            "Decode role: simulated (unscaled) seconds spent receiving KV.",
        )
        success = Counter(
            "vllm:request_success",
            "Finished requests by reason.",
            (*_LABELS, "finished_reason"),
            registry=reg,
        )
        self.success_length = success.labels(**labels, finished_reason="length")
        self.drafts = counter("vllm:spec_decode_num_drafts", "Verify steps with drafts.")
        self.draft_tokens = counter("vllm:spec_decode_num_draft_tokens", "Draft tokens proposed.")
        self.accepted_tokens = counter(
            "vllm:spec_decode_num_accepted_tokens", "Draft tokens accepted."
        )
        per_pos = Counter(
            "vllm:spec_decode_num_accepted_tokens_per_pos",
            "Accepted draft tokens per draft position.",
            (*_LABELS, "position"),
            registry=reg,
        )
        self.accepted_per_pos = [
            per_pos.labels(**labels, position=str(i)) for i in range(draft_tokens)
        ]

    def record_draft(self, draft_tokens: int, accepted: int) -> None:
        """Count one verify step as vLLM does: positions 0..accepted-1 were accepted."""
        self.drafts.inc()
        self.draft_tokens.inc(draft_tokens)
        self.accepted_tokens.inc(accepted)
        for position in range(accepted):
            self.accepted_per_pos[position].inc()

    def set_load(self, running: int, waiting: int, kv_usage: float) -> None:
        """Update the scheduler gauges."""
        self.running.set(running)
        self.waiting.set(waiting)
        self.kv_usage.set(kv_usage)

    def render(self) -> bytes:
        """The Prometheus text exposition of every family."""
        return bytes(generate_latest(self.registry))
