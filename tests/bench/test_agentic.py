"""Agentic replay: per-session ordering with think time, growing context, stats."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest

from inferx_pipeline.bench.agentic import AgenticSpec
from inferx_pipeline.bench.agentic_stats import summarize_agentic
from inferx_pipeline.bench.client import Request
from inferx_pipeline.bench.datasets import Draw, Shard
from inferx_pipeline.bench.fake import FakeSender
from inferx_pipeline.bench.load import LoadShape, StopSignal
from inferx_pipeline.bench.records import NS_PER_S, RequestRecord
from inferx_pipeline.tokens import default_tokenizer

TOK = default_tokenizer()
THINK_S = 0.02


@pytest.fixture
def trace(tmp_path: Path) -> str:
    lines = []
    for s in range(4):
        turns = ",".join(
            f'{{"input_len":{5 + t},"output_len":3,"think_time_s":{0 if t == 0 else THINK_S}}}'
            for t in range(3)
        )
        lines.append(
            f'{{"session_id":"s{s}","prefix_id":"p{s % 2}","prefix_len":7,"turns":[{turns}]}}'
        )
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _replay(spec: AgenticSpec, sessions: int, sender: FakeSender, conc: int) -> list[RequestRecord]:
    plan = spec.plan(Draw(sessions, 0, seed=1), TOK, Shard())
    return asyncio.run(plan.measure(sender, LoadShape(concurrency=conc), StopSignal())).records


def test_turn_starts_after_previous_turn_plus_think_time(trace: str) -> None:
    records = _replay(AgenticSpec(trace=trace), 4, FakeSender(ttft_s=0.005, itl_s=0.001), 4)
    assert len(records) == 12
    by_session: dict[str, list[RequestRecord]] = {}
    for r in records:
        by_session.setdefault(str(r.session_id), []).append(r)
    for turns in by_session.values():
        turns.sort(key=lambda r: r.turn or 0)
        assert [r.turn for r in turns] == [1, 2, 3]
        for prev, nxt in itertools.pairwise(turns):
            assert nxt.start_ns >= prev.end_ns + int(THINK_S * NS_PER_S)
    # sessions ran concurrently: session 2's first turn began before session 1 finished
    firsts = sorted(r.start_ns for r in records if r.turn == 1)
    lasts = sorted(r.end_ns for r in records if r.turn == 3)
    assert firsts[-1] < lasts[0]


def test_context_grows_with_earlier_inputs_and_outputs(trace: str) -> None:
    sender = FakeSender()
    _replay(AgenticSpec(trace=trace), 1, sender, 1)
    lens = [r.prompt_len for r in sender.sent]
    # prefix 7; turn inputs 5, 6, 7; outputs 3 each
    assert lens == [7 + 5, 7 + 5 + 3 + 6, 7 + 5 + 3 + 6 + 3 + 7]
    last = sender.sent[-1].prompt
    assert isinstance(last, tuple)
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user", "assistant", "user"]


def test_shared_prefix_is_the_same_text_across_sessions(trace: str) -> None:
    sender = FakeSender()
    _replay(AgenticSpec(trace=trace), 4, sender, 1)
    systems = {}
    for r in sender.sent:
        assert isinstance(r.prompt, tuple)
        systems.setdefault(r.session_id, r.prompt[0]["content"])
    assert systems["s0#0"] == systems["s2#2"] != systems["s1#1"]


def test_failed_turn_ends_its_session(trace: str) -> None:
    def fail_second_turn(r: Request) -> bool:
        return r.turn == 2 and r.session_id == "s0#0"

    records = _replay(AgenticSpec(trace=trace), 2, FakeSender(fail=fail_second_turn), 2)
    s0 = [r for r in records if r.session_id == "s0#0"]
    assert [(r.turn, r.ok) for r in sorted(s0, key=lambda r: r.turn or 0)] == [
        (1, True),
        (2, False),
    ]
    assert len([r for r in records if r.session_id == "s1#1"]) == 3


def test_trace_cycles_when_more_sessions_than_lines(trace: str) -> None:
    plan = AgenticSpec(trace=trace, max_turns=2).plan(Draw(6, 0, seed=0), TOK, Shard())
    assert [s.session_id for s in plan.sessions][4:] == ["s0#4", "s1#5"]
    assert plan.planned == 12
    # cycled sessions get fresh text, not a copy
    assert plan.sessions[4].turns[0].text != plan.sessions[0].turns[0].text


def test_summary_per_turn_per_session_and_e2e_interactivity() -> None:
    ms = 1_000_000
    records = []
    for s in range(2):
        for t in (1, 2):
            start = (t * 1000) * ms
            records.append(
                RequestRecord(
                    index=s * 2 + t, prompt_len=100 * t, max_tokens=10, start_ns=start,
                    chunk_ns=[start + 50 * ms, start + (100 + 100 * s) * ms],
                    end_ns=start + 200 * ms, output_tokens=10, session_id=f"s{s}", turn=t,
                )
            )  # fmt: skip
    summary, missing = summarize_agentic(records, {"p90": 1})
    assert (summary.sessions, summary.turns) == (2, 4)
    assert [t.turn for t in summary.per_turn] == [1, 2]
    assert summary.per_turn[1].mean_input_len == 200
    assert summary.per_turn[0].mean_e2el_ms == pytest.approx(150.0)
    assert summary.per_session[0].duration_s == pytest.approx(1.2)
    # E2EL/OSL samples: 10, 10, 20, 20 ms/token -> p90 = 20
    assert summary.p90_e2el_per_output_token_ms == pytest.approx(20.0)
    assert summary.e2e_interactivity == pytest.approx(50.0)
    assert missing == []
    _, missing = summarize_agentic(records, {"p90": 64})
    assert missing == ["agentic.p90_e2el_per_output_token_ms"]
