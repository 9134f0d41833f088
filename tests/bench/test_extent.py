"""A point lasts as long as the validity policy needs (LoadGen's rule): the client issues
until both the planned count and ``min_duration_s`` are reached, then drains."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest
import yaml

from inferx_pipeline.bench.agentic import AgenticSpec
from inferx_pipeline.bench.config import BenchConfig
from inferx_pipeline.bench.datasets import RandomSpec
from inferx_pipeline.bench.fake import FakeSender
from inferx_pipeline.bench.result import RawResult
from inferx_pipeline.bench.runner import run_benchmark
from tests.paths import ROOT

MIN_S = 0.3


@pytest.fixture(scope="module")
def rules_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped rules with a test-sized minimum duration."""
    rules = yaml.safe_load((ROOT / "catalog" / "bench-validity.yaml").read_text())
    rules["min_duration_s"] = MIN_S
    path = tmp_path_factory.mktemp("rules") / "bench-validity.yaml"
    path.write_text(yaml.safe_dump(rules))
    return path


def _run(sender: FakeSender, rules: Path, **changes: object) -> RawResult:
    base: dict[str, object] = {
        "endpoint": "http://fake", "model": "m", "concurrency": 2, "num_prompts": 2,
        "dataset": RandomSpec(input_len=8, output_len=2), "min_duration_s": MIN_S,
        "scrape_metrics": False, "validity_file": rules,
    }  # fmt: skip
    config = BenchConfig.model_validate(base | changes)
    return asyncio.run(run_benchmark(config, sender=sender))


def _short(result: RawResult) -> list[str]:
    return [r for r in result.invalid_reasons if r.startswith("measured for")]


@pytest.mark.parametrize("rate", [float("inf"), 200.0], ids=["closed", "open"])
def test_a_small_point_keeps_sending_fresh_prompts_until_the_minimum(
    rules_file: Path, rate: float
) -> None:
    sender = FakeSender(ttft_s=0.01)
    result = _run(sender, rules_file, request_rate=rate)
    assert result.dataset.num_prompts == 2  # planned
    assert result.num_prompts == result.completed == len(sender.sent) > 2  # measured
    assert (result.min_duration_s, result.stop_reason) == (MIN_S, None)
    assert result.duration >= MIN_S and _short(result) == []
    assert sorted(r.index for r in sender.sent) == list(range(len(sender.sent)))
    # drawn on from the seeded generator, not the planned prompts again
    assert max(Counter(str(r.prompt) for r in sender.sent).values()) == 1


def test_extra_prompts_are_the_same_for_the_same_seed(rules_file: Path) -> None:
    first, second = FakeSender(ttft_s=0.01), FakeSender(ttft_s=0.01)
    _run(first, rules_file, concurrency=1, num_prompts=1)
    _run(second, rules_file, concurrency=1, num_prompts=1)
    common = min(len(first.sent), len(second.sent))
    assert common > 1
    assert [r.prompt for r in first.sent[:common]] == [r.prompt for r in second.sent[:common]]


def test_a_point_longer_than_the_minimum_sends_exactly_the_planned_count(
    rules_file: Path,
) -> None:
    sender = FakeSender(ttft_s=0.03)
    result = _run(sender, rules_file, concurrency=1, num_prompts=6, min_duration_s=0.05)
    assert result.num_prompts == len(sender.sent) == result.dataset.num_prompts == 6


def test_agentic_starts_whole_sessions_until_the_minimum(rules_file: Path, tmp_path: Path) -> None:
    turns = ",".join('{"input_len":4,"output_len":2,"think_time_s":0.01}' for _ in range(3))
    trace = tmp_path / "t.jsonl"
    trace.write_text(f'{{"session_id":"s","prefix_id":"p","prefix_len":4,"turns":[{turns}]}}\n')
    sender = FakeSender(ttft_s=0.005)
    result = _run(sender, rules_file, dataset=AgenticSpec(trace=str(trace)), num_prompts=1)
    assert result.dataset.num_prompts == 1 and result.num_prompts > 1  # sessions
    assert result.duration >= MIN_S and _short(result) == []
    per_session = Counter(r.session_id for r in sender.sent)
    assert len(per_session) == result.num_prompts
    assert set(per_session.values()) == {3}  # a session in progress finishes


def test_a_deadline_during_the_extension_is_invalid_with_its_reason(rules_file: Path) -> None:
    result = _run(FakeSender(ttft_s=0.01), rules_file, min_duration_s=30.0, deadline_s=MIN_S)
    assert (result.status, result.stop_reason) == ("incomplete", "deadline")
    assert result.num_prompts > 2 and not result.valid
    assert any(r.startswith("stopped early (deadline)") for r in result.invalid_reasons)
    assert not any("--num-prompts" in r for r in result.invalid_reasons)


def test_a_failing_server_ends_the_extension(rules_file: Path) -> None:
    sender = FakeSender(fail=lambda _: True)
    result = _run(sender, rules_file, min_duration_s=30.0)
    # a whole round (the concurrency) failed in a row: nothing more to measure
    assert result.num_prompts <= 2 + 2 and result.status == "failed"
    assert any("requests kept failing" in r for r in _short(result))
