"""The client watching itself: event-loop lag and CPU use while it measures.

A loop that wakes late stamps chunks late; a core near 100% queues work. Either
makes the client, not the server, part of the latencies it reports.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from types import TracebackType

import numpy as np

from inferx_pipeline.bench.records import NS_PER_S

# Often enough to catch a stall of a few ms, rarely enough to cost nothing.
PROBE_INTERVAL_S = 0.005


@dataclass(frozen=True)
class ClientLoad:
    """Lag p99 in ms (how late a timer fired) and CPU in % of one core."""

    event_loop_lag_p99_ms: float
    cpu_percent: float


class LoopMonitor:
    """``async with LoopMonitor() as m: ...`` then ``m.load()``."""

    def __init__(self, interval_s: float = PROBE_INTERVAL_S) -> None:
        self._interval_s = interval_s
        self._lags_ms: list[float] = []
        self._task: asyncio.Task[None] | None = None
        self._cpu0 = self._wall0 = 0.0
        self._cpu = self._wall = 0.0

    async def _probe(self) -> None:
        interval_ns = int(self._interval_s * NS_PER_S)
        while True:
            t0 = time.perf_counter_ns()
            await asyncio.sleep(self._interval_s)
            self._lags_ms.append(max(0, time.perf_counter_ns() - t0 - interval_ns) / 1e6)

    async def __aenter__(self) -> LoopMonitor:
        self._cpu0, self._wall0 = time.process_time(), time.perf_counter()
        self._task = asyncio.ensure_future(self._probe())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._cpu = time.process_time() - self._cpu0
        self._wall = time.perf_counter() - self._wall0
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def load(self) -> ClientLoad:
        """What was measured between enter and exit."""
        lag = float(np.percentile(self._lags_ms, 99)) if self._lags_ms else 0.0
        cpu = 100.0 * self._cpu / self._wall if self._wall > 0 else 0.0
        return ClientLoad(event_loop_lag_p99_ms=lag, cpu_percent=cpu)
