"""Load shapes: a closed loop at fixed concurrency, or Poisson/gamma arrivals under a cap.

Both issue until an ``Extent`` has enough (the planned count and the minimum duration),
then drain what is in flight. Both stop early, without losing what finished, when the
run's ``StopSignal`` fires (deadline or Ctrl-C): requests in flight are cancelled and
not counted.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from inferx_pipeline.bench.client import Request, Sender
from inferx_pipeline.bench.extent import Extent
from inferx_pipeline.bench.prompts import seeded
from inferx_pipeline.bench.records import NS_PER_S

T = TypeVar("T")


async def sleep_until(deadline_ns: int) -> None:
    """Sleep to an absolute ``perf_counter_ns`` time, never waking early."""
    while (left := deadline_ns - time.perf_counter_ns()) > 0:
        await asyncio.sleep(left / NS_PER_S)


@dataclass(frozen=True)
class LoadShape:
    """How requests are offered: ``request_rate`` inf = closed loop at ``concurrency``;
    for at least ``min_duration_s`` seconds (and the planned count)."""

    concurrency: int
    request_rate: float = math.inf
    burstiness: float = 1.0
    seed: int = 0
    min_duration_s: float = 0.0

    def extent(self, planned: int) -> Extent:
        """When a measure phase of ``planned`` items in this shape has issued enough."""
        return Extent(planned, self.min_duration_s, round_size=self.concurrency)


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
        """Measured requests this plan sends at least, if nothing stops it."""
        ...

    async def warmup(self, sender: Sender, shape: LoadShape, stop: StopSignal) -> None: ...

    async def measure(self, sender: Sender, shape: LoadShape, stop: StopSignal) -> Extent: ...


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
    items: Iterable[T],
    send: Callable[[T], Awaitable[None]],
    workers: int,
    stop: StopSignal,
    extent: Extent,
) -> None:
    """``workers`` loops each sending the next item as soon as its last one finished,
    while ``extent`` wants more."""
    queue: Iterator[T] = iter(items)

    async def worker() -> None:
        while not stop.stopped and extent.wants_more():
            try:
                item = next(queue)
            except StopIteration:
                return
            extent.issue()
            await send(item)

    await until_stopped([worker() for _ in range(max(1, workers))], stop)


def arrivals_s(shape: LoadShape) -> Iterator[float]:
    """Seconds after start at which each request arrives, without end (gamma, seeded).

    Burstiness 1 is a Poisson process; lower is burstier, higher more regular.
    """
    rng = seeded(shape.seed, "arrivals")
    scale = 1.0 / (shape.request_rate * shape.burstiness)
    t = 0.0
    while True:
        yield t
        t += rng.gammavariate(shape.burstiness, scale)


async def open_loop(
    items: Iterable[T],
    send: Callable[[T], Awaitable[None]],
    shape: LoadShape,
    stop: StopSignal,
    extent: Extent,
) -> None:
    """Send each item at its arrival time while ``extent`` wants more, at most
    ``shape.concurrency`` in flight (later arrivals queue)."""
    cap = asyncio.Semaphore(max(1, shape.concurrency))
    origin = time.perf_counter_ns()

    async def one(item: T) -> None:
        async with cap:
            await send(item)

    async def arrive() -> None:
        sent: list[asyncio.Future[None]] = []
        try:
            for item, at_s in zip(items, arrivals_s(shape), strict=False):
                await sleep_until(origin + int(at_s * NS_PER_S))
                if not extent.wants_more():
                    break
                extent.issue()
                sent.append(asyncio.ensure_future(one(item)))
            await asyncio.gather(*sent)
        finally:  # a stop cancels this task: what it sent goes with it
            for task in sent:
                task.cancel()
            await asyncio.gather(*sent, return_exceptions=True)

    await until_stopped([arrive()], stop)


async def offer(
    items: Iterable[T],
    send: Callable[[T], Awaitable[None]],
    shape: LoadShape,
    stop: StopSignal,
    extent: Extent,
) -> None:
    """Offer ``items`` to ``send`` closed-loop, or open-loop when a rate is set, for as
    long as ``extent`` wants more."""
    if math.isinf(shape.request_rate):
        await closed_loop(items, send, shape.concurrency, stop, extent)
    else:
        await open_loop(items, send, shape, stop, extent)


async def run_requests(
    requests: Iterable[Request],
    sender: Sender,
    shape: LoadShape,
    stop: StopSignal,
    extent: Extent,
) -> Extent:
    """Send ``requests`` in ``shape`` while ``extent`` wants more; ``extent`` holds the
    records of those that finished, in finish order."""

    async def send(request: Request) -> None:
        extent.add(await sender.send(request))

    await offer(requests, send, shape, stop, extent)
    return extent


@dataclass(frozen=True)
class FlatPlan:
    """Independent single-turn requests (random and prefix-repetition datasets).

    ``extra`` continues ``requests`` (the same seeded generator, fresh prompts) for as
    long as the shape's minimum duration needs; it is drawn lazily, once.
    """

    warmup_requests: Sequence[Request]
    requests: Sequence[Request]
    extra: Iterable[Request] = ()

    @property
    def planned(self) -> int:
        """Measured requests to send at least."""
        return len(self.requests)

    async def warmup(self, sender: Sender, shape: LoadShape, stop: StopSignal) -> None:
        """Send the warmup requests closed-loop at the run's concurrency; discard them."""
        closed = LoadShape(concurrency=shape.concurrency)
        warm = closed.extent(len(self.warmup_requests))
        await run_requests(self.warmup_requests, sender, closed, stop, warm)

    async def measure(self, sender: Sender, shape: LoadShape, stop: StopSignal) -> Extent:
        """Send the measured requests in ``shape``, then extra ones while it needs them."""
        extent = shape.extent(self.planned)
        return await run_requests(
            itertools.chain(self.requests, self.extra), sender, shape, stop, extent
        )
