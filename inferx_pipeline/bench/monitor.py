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

# A probe is a bare timer callback (no task, no future), but one that wakes an idle
# process costs ~80 us on a small VM: at 5 ms that was ~17 us per chunk at concurrency
# 16. 50 probes/s still give p99 from hundreds of samples per run.
PROBE_INTERVAL_S = 0.02


@dataclass(frozen=True)
class ClientLoad:
    """Lag p99 in ms (how late a timer fired) and CPU in % of one core."""

    event_loop_lag_p99_ms: float
    cpu_percent: float


class LoopMonitor:
    """``async with LoopMonitor() as m: ...`` then ``m.load()``."""

    def __init__(self, interval_s: float = PROBE_INTERVAL_S) -> None:
        self._interval_s = interval_s
        self._interval_ns = int(interval_s * NS_PER_S)
        self._lags_ms: list[float] = []
        self._timer: asyncio.TimerHandle | None = None
        self._due_ns = 0
        self._cpu0 = self._wall0 = 0.0
        self._cpu = self._wall = 0.0

    def _probe(self) -> None:
        now = time.perf_counter_ns()
        self._lags_ms.append(max(0, now - self._due_ns) / 1e6)
        self._arm(now)

    def _arm(self, now_ns: int) -> None:
        self._due_ns = now_ns + self._interval_ns
        self._timer = asyncio.get_running_loop().call_later(self._interval_s, self._probe)

    async def __aenter__(self) -> LoopMonitor:
        self._cpu0, self._wall0 = time.process_time(), time.perf_counter()
        self._arm(time.perf_counter_ns())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._cpu = time.process_time() - self._cpu0
        self._wall = time.perf_counter() - self._wall0
        if self._timer is not None:
            self._timer.cancel()

    def load(self) -> ClientLoad:
        """What was measured between enter and exit."""
        lag = float(np.percentile(self._lags_ms, 99)) if self._lags_ms else 0.0
        cpu = 100.0 * self._cpu / self._wall if self._wall > 0 else 0.0
        return ClientLoad(event_loop_lag_p99_ms=lag, cpu_percent=cpu)
