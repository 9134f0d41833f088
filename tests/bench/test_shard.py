"""Sharding: two client processes send the same requests as one, merged before statistics."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from inferx_pipeline.bench.config import BenchConfig
from inferx_pipeline.bench.datasets import RandomSpec
from inferx_pipeline.bench.runner import benchmark
from tests.bench.server import TestServer


def _config(url: str, processes: int) -> BenchConfig:
    return BenchConfig(
        endpoint=url, model="m", concurrency=4, num_prompts=21, seed=9, processes=processes,
        dataset=RandomSpec(input_len=12, output_len=5),
    )  # fmt: skip


def test_two_processes_merge_into_one_result(server: TestServer) -> None:
    single = benchmark(_config(server.url, 1))
    sent_single = sorted(b["prompt"] for b in server.counters.bodies)
    server.counters.bodies.clear()
    sharded = benchmark(_config(server.url, 2))
    assert sorted(b["prompt"] for b in server.counters.bodies) == sent_single
    assert (sharded.completed, sharded.client.processes) == (21, 2)
    assert sharded.input_lens == single.input_lens
    assert sharded.total_output_tokens == single.total_output_tokens == 105
    assert sharded.max_concurrent_requests <= 4


def test_more_processes_than_concurrency_is_refused() -> None:
    with pytest.raises(ValidationError, match="processes=3 exceeds concurrency=2"):
        BenchConfig(endpoint="http://x", model="m", concurrency=2, processes=3)
