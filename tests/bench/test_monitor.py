"""Client self-monitoring: a blocked event loop shows up as lag and CPU."""

from __future__ import annotations

import asyncio
import time

from inferx_pipeline.bench.monitor import ClientLoad, LoopMonitor


def _busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_blocked_loop_reports_lag_and_cpu() -> None:
    async def go() -> ClientLoad:
        monitor = LoopMonitor(interval_s=0.001)
        async with monitor:
            for _ in range(5):
                await asyncio.sleep(0.002)
                _busy(0.03)  # hold the loop: timers fire ~30 ms late
        return monitor.load()

    load = asyncio.run(go())
    assert load.event_loop_lag_p99_ms > 10
    assert load.cpu_percent > 0


def test_idle_monitor_before_any_probe_reports_zero() -> None:
    assert LoopMonitor().load() == ClientLoad(event_loop_lag_p99_ms=0.0, cpu_percent=0.0)
