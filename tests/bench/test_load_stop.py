"""A stopped load leaves nothing for asyncio to complain about (the workers it cancelled)."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

from inferx_pipeline.bench.client import Request
from inferx_pipeline.bench.fake import FakeSender
from inferx_pipeline.bench.load import LoadShape, StopSignal, run_requests

REQS = [Request(index=i, prompt="t1", prompt_len=1, max_tokens=2) for i in range(30)]


def test_stop_mid_flight_leaves_no_unretrieved_exception() -> None:
    reported: list[str] = []

    def report(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        reported.append(context["message"])

    async def go() -> int:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(report)
        stop = StopSignal()
        loop.call_later(0.035, stop.stop, "interrupted")
        records = await run_requests(REQS, FakeSender(ttft_s=0.01), LoadShape(concurrency=3), stop)
        gc.collect()  # a future whose exception nobody retrieved says so when collected
        return len(records)

    assert 0 < asyncio.run(go()) < len(REQS)  # stopped with requests in flight
    assert reported == []
