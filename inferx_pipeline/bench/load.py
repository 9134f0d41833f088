"""Load shapes: a closed loop at fixed concurrency, or Poisson/gamma arrivals under a cap.

Both stop early, without losing what finished, when the run's ``StopSignal`` fires
(deadline or Ctrl-C): requests in flight are cancelled and not counted.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from inferx_pipeline.bench.client import Request, Sender
from inferx_pipeline.bench.prompts import seeded
from inferx_pipeline.bench.records import NS_PER_S, RequestRecord

T = TypeVar("T")


async def sleep_until(deadline_ns: int) -> None:
    """Sleep to an absolute ``perf_counter_ns`` time, never waking early."""
    while (left := deadline_ns - time.perf_counter_ns()) > 0:
        await asyncio.sleep(left / NS_PER_S)


@dataclass(frozen=True)
class LoadShape:
    """How requests are offered: ``request_rate`` inf = closed loop at ``concurrency``."""

    concurrency: int
    request_rate: float = math.inf
    burstiness: float = 1.0
    seed: int = 0


class StopSignal:
    """Set once, with the reason recorded in the result (``deadline``, ``interrupted``)."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.reason = ""

    def stop(self, reason: str) -> None:
        """Ask the run to stop; the first reason wins."""
        if not self.event.is_set():
            self.reason = reason
            self.event.set()

    @property
    def stopped(self) -> bool:
        return self.event.is_set()


class Plan(Protocol):
    """A dataset turned into work: warmup (discarded) then measured requests."""

    @property
    def planned(self) -> int:
        """Measured requests this plan would send if nothing stopped it."""
        ...

    async def warmup(self, sender: Sender, shape: LoadShape, stop: StopSignal) -> None: ...

    async def measure(
        self, sender: Sender, shape: LoadShape, stop: StopSignal
    ) -> list[RequestRecord]: ...


async def until_stopped(work: Sequence[Awaitable[None]], stop: StopSignal) -> None:
    """Run ``work`` concurrently until all of it is done or ``stop`` fires.

    On stop, what is still running is cancelled; a failure inside ``work`` re-raises.
    """
    tasks = [asyncio.ensure_future(w) for w in work]
    everything: asyncio.Future[Any] = asyncio.gather(*tasks)
    waiter: asyncio.Future[Any] = asyncio.ensure_future(stop.event.wait())
    try:
        await asyncio.wait([everything, waiter], return_when=asyncio.FIRST_COMPLETED)
        if everything.done():
            everything.result()
    finally:
        for task in [*tasks, waiter]:
            task.cancel()
        # Awaiting ``everything`` too takes the CancelledError a cancelled worker leaves in
        # it (asyncio would print it as "exception was never retrieved").
        await asyncio.gather(everything, waiter, return_exceptions=True)


async def closed_loop(
    items: Iterable[T], send: Callable[[T], Awaitable[None]], workers: int, stop: StopSignal
) -> None:
    """``workers`` loops each sending the next item as soon as its last one finished."""
    queue: Iterator[T] = iter(items)

    async def worker() -> None:
        for item in queue:
            if stop.stopped:
                return
            await send(item)

    await until_stopped([worker() for _ in range(max(1, workers))], stop)


def arrival_offsets_s(shape: LoadShape, n: int) -> list[float]:
    """Seconds after start at which each of ``n`` requests arrives (gamma, seeded).

    Burstiness 1 is a Poisson process; lower is burstier, higher more regular.
    """
    rng = seeded(shape.seed, "arrivals")
    scale = 1.0 / (shape.request_rate * shape.burstiness)
    t, out = 0.0, []
    for _ in range(n):
        out.append(t)
        t += rng.gammavariate(shape.burstiness, scale)
    return out


async def open_loop(
    items: Sequence[T], send: Callable[[T], Awaitable[None]], shape: LoadShape, stop: StopSignal
) -> None:
    """Send each item at its arrival time, at most ``shape.concurrency`` in flight."""
    cap = asyncio.Semaphore(max(1, shape.concurrency))
    origin = time.perf_counter_ns()

    async def one(item: T, at_s: float) -> None:
        await sleep_until(origin + int(at_s * NS_PER_S))
        async with cap:
            await send(item)

    offsets = arrival_offsets_s(shape, len(items))
    await until_stopped([one(r, at) for r, at in zip(items, offsets, strict=True)], stop)


async def offer(
    items: Sequence[T], send: Callable[[T], Awaitable[None]], shape: LoadShape, stop: StopSignal
) -> None:
    """Offer ``items`` to ``send`` closed-loop, or open-loop when a rate is set."""
    if math.isinf(shape.request_rate):
        await closed_loop(items, send, shape.concurrency, stop)
    else:
        await open_loop(items, send, shape, stop)


async def run_requests(
    requests: Sequence[Request], sender: Sender, shape: LoadShape, stop: StopSignal
) -> list[RequestRecord]:
    """Send ``requests`` in ``shape``; records of those that finished, in finish order."""
    records: list[RequestRecord] = []

    async def send(request: Request) -> None:
        records.append(await sender.send(request))

    await offer(requests, send, shape, stop)
    return records


@dataclass(frozen=True)
class FlatPlan:
    """Independent single-turn requests (random and prefix-repetition datasets)."""

    warmup_requests: Sequence[Request]
    requests: Sequence[Request]

    @property
    def planned(self) -> int:
        """Measured requests to send."""
        return len(self.requests)

    async def warmup(self, sender: Sender, shape: LoadShape, stop: StopSignal) -> None:
        """Send the warmup requests closed-loop at the run's concurrency; discard them."""
        closed = LoadShape(concurrency=shape.concurrency)
        await run_requests(self.warmup_requests, sender, closed, stop)

    async def measure(
        self, sender: Sender, shape: LoadShape, stop: StopSignal
    ) -> list[RequestRecord]:
        """Send the measured requests in ``shape``."""
        return await run_requests(self.requests, sender, shape, stop)
