"""Pure statistics over request records, with vllm bench serve's definitions.

TTFT, TPOT and E2EL are one sample per completed request; ITL pools every gap
between consecutive chunks over all completed requests. Failed requests count in
``failed`` and nowhere else. Percentiles interpolate linearly (numpy's default, as
vllm does); a percentile with fewer samples than its minimum is None.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from inferx_pipeline.bench.records import NS_PER_S, RequestRecord

PERCENTILES: dict[str, float] = {"p50": 50, "p90": 90, "p95": 95, "p99": 99, "p99.9": 99.9}
LATENCY_METRICS = ("ttft", "tpot", "itl", "e2el")


@dataclass(frozen=True)
class Metrics:
    """Aggregates of one run; ``stats`` maps result keys (``p90_ttft_ms``...) to ms values."""

    completed: int
    failed: int
    total_input_tokens: int
    total_output_tokens: int
    request_throughput: float
    output_throughput: float
    total_token_throughput: float
    max_output_tokens_per_s: float
    max_concurrent_requests: int
    stats: dict[str, float | None]
    not_significant: list[str]


def summarize(
    name: str, values_ms: Sequence[float], min_samples: Mapping[str, int]
) -> tuple[dict[str, float | None], list[str]]:
    """Mean/median/std and the percentiles of ``values_ms`` under result key names.

    Returns the key -> value map (None where too few samples) and the keys left None.
    """
    n = len(values_ms)
    arr = np.asarray(values_ms, dtype=np.float64)
    out: dict[str, float | None] = {
        f"mean_{name}_ms": float(arr.mean()) if n else None,
        f"median_{name}_ms": float(np.median(arr)) if n else None,
        f"std_{name}_ms": float(arr.std()) if n else None,
    }
    for label, q in PERCENTILES.items():
        significant = n > 0 and n >= min_samples.get(label, 1)
        out[f"{label}_{name}_ms"] = float(np.percentile(arr, q)) if significant else None
    return out, [key for key, value in out.items() if value is None]


def interactivity(stats: Mapping[str, float | None]) -> dict[str, float | None]:
    """1000 / TPOT ms at mean, median, p90 and p99, in tok/s/user (None where TPOT is)."""
    out: dict[str, float | None] = {}
    for stat in ("mean", "median", "p90", "p99"):
        tpot = stats.get(f"{stat}_tpot_ms")
        out[f"{stat}_intvty"] = 1000.0 / tpot if tpot else None
    return out


def latency_samples(records: Sequence[RequestRecord]) -> dict[str, list[float]]:
    """Per-metric samples in ms over the completed requests (ITL pooled)."""
    done = [r for r in records if r.ok]
    tpots = [t for r in done if (t := r.tpot_s) is not None]
    return {
        "ttft": [r.ttft_s * 1000 for r in done],
        "tpot": [t * 1000 for t in tpots],
        "itl": [gap * 1000 for r in done for gap in r.itls_s],
        "e2el": [r.e2el_s * 1000 for r in done],
    }


def max_output_tokens_per_s(records: Sequence[RequestRecord]) -> float:
    """Peak output tokens in any one-second bucket from the first send.

    A chunk carrying several tokens (speculative decoding) counts them all, spread
    evenly over the request's chunks.
    """
    done = [r for r in records if r.ok]
    if not done:
        return 0.0
    origin = min(r.start_ns for r in done)
    buckets: dict[int, float] = {}
    for r in done:
        weight = r.output_tokens / len(r.chunk_ns) if r.output_tokens else 1.0
        for t in r.chunk_ns:
            second = (t - origin) // NS_PER_S
            buckets[second] = buckets.get(second, 0.0) + weight
    return max(buckets.values())


def max_concurrent(records: Sequence[RequestRecord]) -> int:
    """Most requests in flight at one instant (exact sweep over send/finish times)."""
    events = sorted(
        [(r.start_ns, 1) for r in records if r.start_ns]
        + [(r.end_ns, -1) for r in records if r.start_ns]
    )
    peak = level = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    return peak


def compute(
    records: Sequence[RequestRecord], duration_s: float, min_samples: Mapping[str, int]
) -> Metrics:
    """All aggregate metrics of a run measured over ``duration_s`` seconds."""
    done = [r for r in records if r.ok]
    stats: dict[str, float | None] = {}
    not_significant: list[str] = []
    for name, values in latency_samples(records).items():
        values_stats, missing = summarize(name, values, min_samples)
        stats |= values_stats
        not_significant += missing
    stats |= interactivity(stats)
    total_in = sum(r.prompt_tokens or r.prompt_len for r in done)
    total_out = sum(r.output_tokens for r in done)
    per_s = 1.0 / duration_s if duration_s > 0 else 0.0
    return Metrics(
        completed=len(done),
        failed=len(records) - len(done),
        total_input_tokens=total_in,
        total_output_tokens=total_out,
        request_throughput=len(done) * per_s,
        output_throughput=total_out * per_s,
        total_token_throughput=(total_in + total_out) * per_s,
        max_output_tokens_per_s=max_output_tokens_per_s(records),
        max_concurrent_requests=max_concurrent(records),
        stats=stats,
        not_significant=not_significant,
    )


def run_window_s(records: Sequence[RequestRecord]) -> float:
    """Seconds from the first send to the last finish over ``records`` (0 if none sent)."""
    sent = [r for r in records if r.start_ns]
    if not sent:
        return 0.0
    return (max(r.end_ns for r in sent) - min(r.start_ns for r in sent)) / NS_PER_S
