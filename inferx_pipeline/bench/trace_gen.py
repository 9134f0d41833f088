"""Generate the shipped synthetic agentic-coding trace (the real AgentX corpus is not here).

Shape, loosely after coding agents: a few large shared system prompts (tools,
repository map), a first user turn, then tool-result turns with long-tailed sizes,
short model outputs (tool calls) and a long final answer; think time is tool run time.

Run: ``python -m inferx_pipeline.bench.trace_gen [OUT.jsonl] [--sessions N] [--seed S]``.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from inferx_pipeline.bench.trace import DATA_DIR, TraceSession, TraceTurn

DEFAULT_NAME = "agentic-coding-small"
PREFIX_LENS = (2048, 3072, 4096)  # three agent harnesses' system prompts


def _bounded_lognormal(rng: random.Random, median: float, sigma: float, low: int, high: int) -> int:
    return max(low, min(high, round(rng.lognormvariate(0.0, sigma) * median)))


def _session(rng: random.Random, index: int) -> TraceSession:
    prefix = rng.randrange(len(PREFIX_LENS))
    n_turns = rng.randint(3, 10)
    turns = [TraceTurn(input_len=_bounded_lognormal(rng, 200, 0.6, 32, 1024), output_len=96)]
    for _ in range(n_turns - 2):
        turns.append(
            TraceTurn(
                input_len=_bounded_lognormal(rng, 400, 0.9, 16, 4096),
                output_len=_bounded_lognormal(rng, 80, 0.5, 16, 512),
                think_time_s=round(min(8.0, rng.expovariate(1 / 1.5)), 3),
            )
        )
    turns.append(
        TraceTurn(
            input_len=_bounded_lognormal(rng, 300, 0.7, 16, 2048),
            output_len=_bounded_lognormal(rng, 400, 0.5, 64, 1536),
            think_time_s=round(min(8.0, rng.expovariate(1 / 1.5)), 3),
        )
    )
    return TraceSession(
        session_id=f"s{index:04d}",
        prefix_id=f"harness-{prefix}",
        prefix_len=PREFIX_LENS[prefix],
        turns=turns,
    )


def generate(sessions: int, seed: int) -> list[TraceSession]:
    """``sessions`` synthetic sessions; the same seed gives the same trace."""
    rng = random.Random(seed)
    return [_session(rng, i) for i in range(sessions)]


def write(path: Path, sessions: list[TraceSession]) -> None:
    """One compact JSON object per line."""
    path.write_text("".join(s.model_dump_json() + "\n" for s in sessions))


def main() -> None:
    """Command-line entry: regenerate the shipped trace by default."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=DATA_DIR / f"{DEFAULT_NAME}.jsonl")
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--seed", type=int, default=20250101)
    args = parser.parse_args()
    write(args.out, generate(args.sessions, args.seed))


if __name__ == "__main__":
    main()
