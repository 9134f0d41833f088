"""Run one benchmark: ``await run_benchmark(config)`` or ``benchmark(config)`` from sync code.

The run never raises for what the endpoint does (refused, 500s, broken streams):
those requests fail and the result says so (``status: failed`` when all did). It
raises only for a wrong setup (unreadable tokenizer, trace or validity file).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from inferx_pipeline.bench.assemble import RunTimes, ShardOutcome, build_result
from inferx_pipeline.bench.client import HttpSender, Sender, open_session
from inferx_pipeline.bench.config import BenchConfig
from inferx_pipeline.bench.datasets import Shard
from inferx_pipeline.bench.load import StopSignal
from inferx_pipeline.bench.monitor import LoopMonitor
from inferx_pipeline.bench.prometheus import MetricsSnapshot, acceptance, scrape
from inferx_pipeline.bench.result import RawResult
from inferx_pipeline.bench.timeouts import load_timeouts, resolve
from inferx_pipeline.bench.validity import ValidityRules, load_rules
from inferx_pipeline.bench.wire import Timeouts
from inferx_pipeline.errors import BenchError, EndpointError
from inferx_pipeline.settings import Settings
from inferx_pipeline.tokens import load_tokenizer

T = TypeVar("T")


def rules_for(config: BenchConfig) -> ValidityRules:
    """The config's validity rules, else the project's ``catalog/bench-validity.yaml``."""
    return load_rules(config.validity_file or Settings().catalog_dir / "bench-validity.yaml")


def timeouts_for(config: BenchConfig) -> Timeouts:
    """The config's per-request limits, else the project's ``catalog/bench-timeouts.yaml``."""
    if config.idle_timeout_s is not None and config.total_timeout_s is not None:
        return Timeouts(config.idle_timeout_s, config.total_timeout_s)
    defaults = load_timeouts(Settings().catalog_dir)
    return resolve(config.idle_timeout_s, config.total_timeout_s, defaults)


async def run_shard(
    config: BenchConfig,
    shard: Shard,
    stop: StopSignal,
    sender: Sender | None = None,
    on_ready: Callable[[], object] | None = None,
) -> ShardOutcome:
    """Build this shard's requests, warm up, then measure; ``on_ready`` runs in between.

    ``sender`` replaces HTTP (tests pass ``inferx_pipeline.bench.fake.FakeSender``).
    """
    tokenizer = load_tokenizer(config.tokenizer)
    plan = config.dataset.plan(config.draw(), tokenizer, shard)
    shape = config.shape(shard)
    if on_ready is not None:
        on_ready()
    async with contextlib.AsyncExitStack() as stack:
        if sender is None:
            session = await stack.enter_async_context(
                open_session(shape.concurrency, timeouts_for(config))
            )
            sender = HttpSender(
                session,
                config.endpoint,
                config.api,
                config.model,
                config.chat_template_kwargs,
                tokenizer.count,
            )
        await plan.warmup(sender, shape, stop)
        monitor = LoopMonitor()
        async with monitor:
            records = await plan.measure(sender, shape, stop)
    return ShardOutcome(records, monitor.load(), stop.reason, plan.planned)


def arm_deadline(stop: StopSignal, deadline_s: float | None) -> asyncio.TimerHandle | None:
    """Fire ``stop`` with reason ``deadline`` after ``deadline_s`` seconds."""
    if deadline_s is None:
        return None
    return asyncio.get_running_loop().call_later(deadline_s, stop.stop, "deadline")


async def _snapshot(config: BenchConfig) -> MetricsSnapshot | None:
    # /metrics is optional: servers other than vLLM-alikes may not have it.
    if not config.scrape_metrics:
        return None
    try:
        return await asyncio.to_thread(scrape, config.endpoint)
    except EndpointError:
        return None


async def _outcomes(
    config: BenchConfig, stop: StopSignal, sender: Sender | None
) -> list[ShardOutcome]:
    if config.processes == 1:
        return [await run_shard(config, Shard(), stop, sender)]
    if sender is not None:
        raise BenchError("a custom sender cannot be shared across processes; use processes=1")
    from inferx_pipeline.bench.shard import run_sharded  # spawns processes: import when used

    return await run_sharded(config, stop)


async def run_benchmark(
    config: BenchConfig, stop: StopSignal | None = None, sender: Sender | None = None
) -> RawResult:
    """Measure one load point; a fired ``stop`` ends it early with status incomplete."""
    stop = stop or StopSignal()
    rules = rules_for(config)
    tokenizer_id = load_tokenizer(config.tokenizer).name
    before = await _snapshot(config)
    started = time.time()
    deadline = arm_deadline(stop, config.deadline_s)
    try:
        outcomes = await _outcomes(config, stop, sender)
    finally:
        if deadline is not None:
            deadline.cancel()
    finished = time.time()
    after = await _snapshot(config)
    realized = acceptance(before, after) if before and after else None
    times = RunTimes(started_at=started, finished_at=finished)
    return build_result(config, rules, tokenizer_id, outcomes, realized, times, stop.reason)


def on_first_sigint(stop: StopSignal) -> Callable[[], None]:
    """Make the first Ctrl-C stop the run gracefully; the second one interrupts.

    Returns the undo. A no-op away from the main thread (signals cannot be caught there).
    """
    loop = asyncio.get_running_loop()

    def handle() -> None:
        stop.stop("interrupted")
        loop.remove_signal_handler(signal.SIGINT)

    try:
        loop.add_signal_handler(signal.SIGINT, handle)
    except (ValueError, RuntimeError, NotImplementedError):
        return lambda: None

    def undo() -> None:
        loop.remove_signal_handler(signal.SIGINT)

    return undo


async def _interruptible(config: BenchConfig) -> RawResult:
    stop = StopSignal()
    undo = on_first_sigint(stop)
    try:
        return await run_benchmark(config, stop)
    finally:
        undo()


def run_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on uvloop when installed, else asyncio's default loop."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


def benchmark(config: BenchConfig) -> RawResult:
    """Sync wrapper of ``run_benchmark``; Ctrl-C returns what was measured, incomplete."""
    return run_loop(_interruptible(config))
