"""Per-turn and per-session statistics of an agentic replay, and E2E interactivity."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from inferx_pipeline.bench.records import NS_PER_S, RequestRecord
from inferx_pipeline.bench.result import AgenticSummary, SessionStats, TurnStats

P90_KEY = "agentic.p90_e2el_per_output_token_ms"


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def _p90(values: Sequence[float], min_samples: Mapping[str, int]) -> float | None:
    if not values or len(values) < min_samples.get("p90", 1):
        return None
    return float(np.percentile(values, 90))


def _turn(turn: int, records: Sequence[RequestRecord], min_samples: Mapping[str, int]) -> TurnStats:
    done = [r for r in records if r.ok]
    return TurnStats(
        turn=turn,
        requests=len(records),
        mean_input_len=float(np.mean([r.prompt_tokens or r.prompt_len for r in records])),
        mean_output_len=float(np.mean([r.output_tokens for r in records])),
        mean_ttft_ms=_mean([r.ttft_s * 1000 for r in done]),
        mean_e2el_ms=_mean([r.e2el_s * 1000 for r in done]),
        p90_e2el_ms=_p90([r.e2el_s * 1000 for r in done], min_samples),
    )


def _session(session_id: str, records: Sequence[RequestRecord]) -> SessionStats:
    done = [r for r in records if r.ok]
    start = min(r.start_ns for r in records)
    end = max(r.end_ns for r in records)
    return SessionStats(
        session_id=session_id,
        turns=len(records),
        completed_turns=len(done),
        duration_s=(end - start) / NS_PER_S,
        output_tokens=sum(r.output_tokens for r in done),
        mean_ttft_ms=_mean([r.ttft_s * 1000 for r in done]),
        mean_e2el_ms=_mean([r.e2el_s * 1000 for r in done]),
    )


def summarize_agentic(
    records: Sequence[RequestRecord], min_samples: Mapping[str, int]
) -> tuple[AgenticSummary, list[str]]:
    """The agentic block and the keys left null for too few samples.

    E2E interactivity is 1000 / P90 over completed turns of E2EL / output tokens (ms).
    """
    by_turn: dict[int, list[RequestRecord]] = defaultdict(list)
    by_session: dict[str, list[RequestRecord]] = defaultdict(list)
    for r in records:
        by_turn[r.turn or 0].append(r)
        by_session[r.session_id or ""].append(r)
    per_token = [r.e2el_s * 1000 / r.output_tokens for r in records if r.ok and r.output_tokens]
    p90 = _p90(per_token, min_samples)
    summary = AgenticSummary(
        sessions=len(by_session),
        turns=len(records),
        per_turn=[_turn(t, rs, min_samples) for t, rs in sorted(by_turn.items())],
        per_session=[_session(s, rs) for s, rs in sorted(by_session.items())],
        p90_e2el_per_output_token_ms=p90,
        e2e_interactivity=1000.0 / p90 if p90 else None,
    )
    return summary, [] if p90 is not None else [P90_KEY]
