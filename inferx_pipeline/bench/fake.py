"""FakeSender: a scripted stand-in for ``HttpSender`` (like httpx's MockTransport).

It "streams" ``max_tokens`` chunks with asyncio sleeps at the given TTFT and ITL, so
load shapes, agentic ordering and result assembly run without a socket.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from inferx_pipeline.bench.client import Request
from inferx_pipeline.bench.records import RequestRecord


class FakeSender:
    """Answers every request after ``ttft_s`` then one chunk per ``itl_s``.

    ``fail`` picks requests to fail (by request); ``sent`` keeps every request seen.
    """

    def __init__(
        self,
        ttft_s: float = 0.001,
        itl_s: float = 0.0,
        fail: Callable[[Request], bool] = lambda _: False,
    ) -> None:
        self.ttft_s = ttft_s
        self.itl_s = itl_s
        self.fail = fail
        self.sent: list[Request] = []

    async def send(self, request: Request) -> RequestRecord:
        """A record with one chunk per output token and usage as a server reports it."""
        self.sent.append(request)
        record = request.record()
        record.start_ns = time.perf_counter_ns()
        await asyncio.sleep(self.ttft_s)
        if self.fail(request):
            record.error = f"fake failure of request {request.index}"
        else:
            for i in range(request.max_tokens):
                if i and self.itl_s:
                    await asyncio.sleep(self.itl_s)
                record.chunk_ns.append(time.perf_counter_ns())
            record.output_tokens = request.max_tokens
            record.prompt_tokens = request.prompt_len
            record.text = " ".join(f"t{i + 1}" for i in range(request.max_tokens))
        record.end_ns = time.perf_counter_ns()
        return record
