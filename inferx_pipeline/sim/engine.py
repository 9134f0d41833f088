"""The real-time driver: steps the engine core and sleeps to absolute deadlines.

Each step's end is ``previous deadline + duration x time_scale`` on ``perf_counter``,
so scheduling jitter (a late wake-up, the loop's own work) never accumulates: a late
step makes the next one shorter. The clock restarts only when the engine was idle.
Tokens reach each request's ``RequestStream`` when its step's deadline has passed; the
deadline itself is the chunk's intended time (``inferx_sim:*`` metrics), so a client's
measurement can be checked against what the simulator meant to do, not what it managed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator

from inferx_pipeline.sim.core import EngineCore
from inferx_pipeline.sim.prom import SimMetrics
from inferx_pipeline.sim.scheduler import Emission, SimRequest


class EngineDeadError(RuntimeError):
    """The simulated engine crashed (``--crash-after-tokens``); streams end abruptly."""


async def sleep_until(deadline: float) -> None:
    """Sleep to an absolute ``perf_counter`` time; never returns early (timers round to ms)."""
    while (left := deadline - time.perf_counter()) > 0:
        await asyncio.sleep(left)


class RequestStream:
    """The token counts one request receives, one item per step that produced tokens.

    A deque and one waiter future rather than an ``asyncio.Queue``: a push per chunk is
    the simulator's hottest path at high concurrency.
    """

    def __init__(self, request: SimRequest, arrival: float) -> None:
        self.request = request
        self.arrival = arrival
        self.last_token_at: float | None = None
        self.first_deadline = self.last_deadline = 0.0
        self._items: deque[int | BaseException | None] = deque()
        self._waiter: asyncio.Future[None] | None = None

    def push(self, item: int | BaseException | None) -> None:
        """Deliver tokens, the end (None) or the engine's death (an exception)."""
        self._items.append(item)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def __aiter__(self) -> AsyncIterator[int]:
        items = self._items
        while True:
            while not items:
                self._waiter = asyncio.get_running_loop().create_future()
                await self._waiter
            item = items.popleft()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item


class Engine:
    """Owns the core's stepping task; ``open`` a stream per request, ``close`` when done."""

    def __init__(self, core: EngineCore, metrics: SimMetrics, time_scale: float) -> None:
        self.core = core
        self.metrics = metrics
        self.time_scale = time_scale
        self.died = asyncio.Event()
        self._streams: dict[SimRequest, RequestStream] = {}
        self._wake = asyncio.Event()
        self._generated = 0
        self._preemptions_seen = 0
        self._prefill_computed_seen = 0
        self.death: str | None = None  # why the engine died, once it has

    def open(self, request: SimRequest) -> RequestStream:
        """Queue ``request`` and return its stream; EngineDeadError after a crash."""
        if self.died.is_set():
            raise EngineDeadError("engine core is dead")
        stream = RequestStream(request, time.perf_counter())
        self._streams[request] = stream
        self.core.submit(request)
        self.metrics.prompt_tokens.inc(request.prompt_tokens)
        self._wake.set()
        return stream

    def close(self, request: SimRequest) -> None:
        """Forget a request; aborts it in the scheduler if it had not finished."""
        if self._streams.pop(request, None) is not None and not request.finished:
            self.core.scheduler.abort(request)

    async def run(self) -> None:
        """Step until cancelled or crashed (``died`` is set); sleeps while idle."""
        deadline = time.perf_counter()
        while not self.died.is_set():
            outcome = self.core.step()
            self._publish_load()
            if outcome is None:
                self._wake.clear()
                await self._wake.wait()
                deadline = time.perf_counter()
                continue
            deadline += outcome.duration_s * self.time_scale
            await sleep_until(deadline)
            now = time.perf_counter()
            self.metrics.step_lateness.observe(now - deadline)
            self._deliver(outcome.emissions, now, deadline)
            # The streams write this step's chunks before the next step's Python work.
            await asyncio.sleep(0)

    def _deliver(self, emissions: list[Emission], now: float, deadline: float) -> None:
        limit = self.core.config.crash_after_tokens
        step_tokens = 0
        for emission in emissions:
            stream = self._streams.get(emission.request)
            if emission.drafted:
                self.metrics.record_draft(self.core.config.draft_tokens, emission.accepted)
            if stream is None:
                continue
            stream.push(emission.tokens)
            if emission.finished:
                stream.push(None)
            self._observe(stream, emission, now, deadline)
            step_tokens += emission.tokens
            if limit is not None and self._generated + step_tokens >= limit:
                break
        self._generated += step_tokens
        self.metrics.generation_tokens.inc(step_tokens)
        if limit is not None and self._generated >= limit:
            self._crash()

    def _observe(
        self, stream: RequestStream, emission: Emission, now: float, deadline: float
    ) -> None:
        metrics = self.metrics
        if emission.first:
            metrics.ttft.observe(now - stream.arrival)
            stream.first_deadline = deadline
        elif stream.last_token_at is not None:
            metrics.itl.observe(now - stream.last_token_at)
            metrics.intended_itl.observe(deadline - stream.last_deadline)
        stream.last_token_at, stream.last_deadline = now, deadline
        if emission.finished:
            metrics.e2e.observe(now - stream.arrival)
            metrics.success_length.inc()
            if (tokens := stream.request.generated) > 1:
                metrics.intended_tpot.observe((deadline - stream.first_deadline) / (tokens - 1))

    def _publish_load(self) -> None:
        sched = self.core.scheduler
        self.metrics.set_load(len(sched.running), len(sched.waiting), sched.kv_usage)
        if sched.preemptions > self._preemptions_seen:
            self.metrics.preemptions.inc(sched.preemptions - self._preemptions_seen)
            self._preemptions_seen = sched.preemptions
        if sched.prefill_computed > self._prefill_computed_seen:
            self.metrics.prefill_computed.inc(sched.prefill_computed - self._prefill_computed_seen)
            self._prefill_computed_seen = sched.prefill_computed

    def fail(self, reason: str) -> None:
        """Kill the engine: every open stream ends with EngineDeadError, ``/health`` turns 503.

        Idempotent; the first ``reason`` is kept in ``death``.
        """
        if self.died.is_set():
            return
        self.death = reason
        self.died.set()
        self._wake.set()  # an idle ``run`` wakes up and sees it died
        for stream in self._streams.values():
            stream.push(EngineDeadError(f"engine core died mid-stream ({reason})"))

    def _crash(self) -> None:
        limit = self.core.config.crash_after_tokens
        self.fail(f"simulated engine crashed after {limit} generated tokens (--crash-after-tokens)")


@contextlib.asynccontextmanager
async def running(engine: Engine) -> AsyncIterator[Engine]:
    """Run ``engine``'s stepping task for the duration of the block."""
    task = asyncio.create_task(engine.run(), name="inferx-sim-engine")
    try:
        yield engine
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
