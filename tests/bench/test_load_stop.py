"""A stopped load leaves nothing for asyncio to complain about (the workers it cancelled)."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

from inferx_pipeline.bench.client import Request
from inferx_pipeline.bench.fake import FakeSender
from inferx_pipeline.bench.load import LoadShape, StopSignal, run_requests

REQS = [Request(index=i, prompt="t1", prompt_len=1, max_tokens=2) for i in range(30)]


@pytest.mark.parametrize(
    "shape",
    [LoadShape(concurrency=3), LoadShape(concurrency=3, request_rate=1000.0)],
    ids=["closed", "open"],
)
def test_stop_mid_flight_leaves_no_unretrieved_exception(shape: LoadShape) -> None:
    reported: list[str] = []

    def report(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        reported.append(context["message"])

    async def go() -> int:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(report)
        stop = StopSignal()
        loop.call_later(0.035, stop.stop, "interrupted")
        extent = shape.extent(len(REQS))
        await run_requests(REQS, FakeSender(ttft_s=0.01), shape, stop, extent)
        gc.collect()  # a future whose exception nobody retrieved says so when collected
        return len(extent.records)

    assert 0 < asyncio.run(go()) < len(REQS)  # stopped with requests in flight
    assert reported == []
