"""Agentic traces: the shipped corpus loads, bad lines name file:line, generation is seeded."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferx_pipeline.bench import trace_gen
from inferx_pipeline.bench.trace import load_trace
from inferx_pipeline.errors import BenchError


def test_shipped_corpus_loads_and_is_regenerable(tmp_path: Path) -> None:
    sessions = load_trace("agentic-coding-small")
    assert len(sessions) == 64
    assert sessions[0].turns[0].think_time_s == 0.0
    assert len({s.prefix_id for s in sessions}) > 1
    out = tmp_path / "t.jsonl"
    trace_gen.write(out, trace_gen.generate(64, 20250101))
    assert out.read_text() == (trace_gen.DATA_DIR / "agentic-coding-small.jsonl").read_text()


def test_bad_line_names_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"session_id":"a","prefix_id":"p","prefix_len":1,"turns":[{"input_len":1,"output_len":1}]}\n'
        '{"session_id":"b","prefix_id":"p","prefix_len":1,"turns":[{"input_len":0,"output_len":1}]}\n'
    )
    with pytest.raises(
        BenchError, match=r"bad.jsonl:2: turns.0.input_len: Input should be greater"
    ):
        load_trace(str(path))


def test_missing_trace_lists_shipped_names(tmp_path: Path) -> None:
    with pytest.raises(BenchError, match="shipped name: agentic-coding-small"):
        load_trace(str(tmp_path / "nope.jsonl"))
