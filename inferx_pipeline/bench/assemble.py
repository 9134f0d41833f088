"""Turn the shards' request records into one RawResult (pure: no clock, no I/O)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from importlib.metadata import version

import numpy as np

from inferx_pipeline.bench import metrics
from inferx_pipeline.bench.config import BenchConfig
from inferx_pipeline.bench.monitor import ClientLoad
from inferx_pipeline.bench.records import RequestRecord
from inferx_pipeline.bench.result import Acceptance, ClientInfo, RawResult, Status
from inferx_pipeline.bench.validity import RunFacts, ValidityRules, invalid_reasons


@dataclass(frozen=True)
class ShardOutcome:
    """What one client process measured (picklable: it crosses process boundaries)."""

    records: list[RequestRecord]
    load: ClientLoad
    stop_reason: str
    planned: int
    issued: int


@dataclass(frozen=True)
class RunTimes:
    """Wall-clock bounds of the run, unix seconds."""

    started_at: float
    finished_at: float


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def _status(stop_reason: str, completed: int) -> Status:
    if stop_reason:
        return "incomplete"
    return "ok" if completed else "failed"


def _worst_load(outcomes: Sequence[ShardOutcome]) -> ClientLoad:
    return ClientLoad(
        event_loop_lag_p99_ms=max(o.load.event_loop_lag_p99_ms for o in outcomes),
        cpu_percent=max(o.load.cpu_percent for o in outcomes),
    )


def _request_lists(records: Sequence[RequestRecord]) -> dict[str, object]:
    return {
        "input_lens": [r.prompt_tokens or r.prompt_len for r in records],
        "output_lens": [r.output_tokens if r.ok else 0 for r in records],
        "ttfts": [r.ttft_s if r.ok else 0.0 for r in records],
        "itls": [r.itls_s if r.ok else [] for r in records],
        "errors": [r.error or ("" if r.ok else "no token chunk received") for r in records],
        "generated_texts": [r.text for r in records],
    }


def build_result(
    config: BenchConfig,
    rules: ValidityRules,
    tokenizer_id: str,
    outcomes: Sequence[ShardOutcome],
    acceptance: Acceptance | None,
    times: RunTimes,
    stop_reason: str = "",
) -> RawResult:
    """Merge every shard's records, then compute statistics, validity and provenance."""
    records = sorted((r for o in outcomes for r in o.records), key=lambda r: r.index)
    stop_reason = stop_reason or next((o.stop_reason for o in outcomes if o.stop_reason), "")
    duration = metrics.run_window_s(records)
    m = metrics.compute(records, duration, rules.percentile_min_samples)
    agentic, agentic_missing = config.dataset.summary(records, rules.percentile_min_samples)
    done = [r for r in records if r.ok]
    load = _worst_load(outcomes)
    facts = RunFacts(
        planned=sum(o.planned for o in outcomes),
        completed=m.completed,
        failed=m.failed,
        duration_s=duration,
        min_duration_s=config.min_duration_s,
        stop_reason=stop_reason,
        intended_isl_mean=_mean([r.prompt_len for r in done]),
        measured_isl_mean=_mean([r.prompt_tokens for r in done if r.prompt_tokens]),
        intended_osl_mean=_mean([r.max_tokens for r in done]),
        measured_osl_mean=_mean([r.output_tokens for r in done]),
        client=load,
    )
    reasons = invalid_reasons(rules, facts)
    return RawResult.model_validate(
        {
            "date": datetime.fromtimestamp(times.finished_at).strftime("%Y%m%d-%H%M%S"),
            "backend": "openai-chat" if config.api == "chat" else "vllm",
            "model_id": config.model,
            "tokenizer_id": tokenizer_id,
            "num_prompts": sum(o.issued for o in outcomes),
            "min_duration_s": config.min_duration_s,
            "request_rate": "inf" if math.isinf(config.request_rate) else config.request_rate,
            "burstiness": config.burstiness,
            "max_concurrency": config.concurrency,
            "duration": duration,
            "completed": m.completed,
            "failed": m.failed,
            "total_input_tokens": m.total_input_tokens,
            "total_output_tokens": m.total_output_tokens,
            "request_throughput": m.request_throughput,
            "output_throughput": m.output_throughput,
            "total_token_throughput": m.total_token_throughput,
            "max_output_tokens_per_s": m.max_output_tokens_per_s,
            "max_concurrent_requests": m.max_concurrent_requests,
            **_request_lists(records),
            **m.stats,
            "status": _status(stop_reason, m.completed),
            "stop_reason": stop_reason or None,
            "valid": not reasons,
            "invalid_reasons": reasons,
            "not_significant": m.not_significant + agentic_missing,
            "client_saturated": rules.saturation.saturated(load),
            "client_contended": rules.saturation.contended(load),
            "client": ClientInfo(
                version=version("inferx-pipeline"),
                processes=len(outcomes),
                event_loop_lag_p99_ms=load.event_loop_lag_p99_ms,
                cpu_percent=load.cpu_percent,
            ),
            "endpoint": config.endpoint,
            "api": config.api,
            "dataset": config.dataset.info(config.draw()),
            "seed": config.seed,
            "started_at": times.started_at,
            "finished_at": times.finished_at,
            "measured_isl_mean": facts.measured_isl_mean,
            "measured_osl_mean": facts.measured_osl_mean,
            "acceptance": acceptance,
            "agentic": agentic,
            "metadata": config.metadata,
        }
    )
