"""One shard of a run's load: measured in this process, or P shards in spawned processes.

``run_shard`` builds a shard's requests, warms up and measures. One Python process times
streams accurately up to a chunk rate (see ``benchmarks/client_overhead.py``); past it,
shard k of P sends every P-th request with 1/P of the concurrency and rate
(``run_sharded``). Processes start measuring together (a barrier after building
prompts); ``perf_counter_ns`` is one machine-wide monotonic clock, so records merge
before any statistic is computed.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing as mp
import os
import queue
import signal
import traceback
from collections.abc import Callable
from multiprocessing.context import SpawnProcess
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier

from inferx_pipeline import parentdeath
from inferx_pipeline.bench.assemble import ShardOutcome
from inferx_pipeline.bench.client import HttpSender, Sender, open_session
from inferx_pipeline.bench.config import BenchConfig
from inferx_pipeline.bench.datasets import Shard
from inferx_pipeline.bench.load import StopSignal
from inferx_pipeline.bench.loop import arm_deadline, on_first_sigint, run_loop
from inferx_pipeline.bench.monitor import LoopMonitor
from inferx_pipeline.bench.timeouts import load_timeouts, resolve
from inferx_pipeline.bench.wire import Timeouts
from inferx_pipeline.errors import BenchError
from inferx_pipeline.settings import Settings
from inferx_pipeline.tokens import load_tokenizer

# Building prompts for a big shard takes seconds; a shard that never gets ready is dead.
READY_TIMEOUT_S = 300.0
POLL_S = 0.2
Message = tuple[str, ShardOutcome | str]


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
            extent = await plan.measure(sender, shape, stop)
    return ShardOutcome(extent.records, monitor.load(), stop.reason, plan.planned, extent.issued)


async def _child_main(config: BenchConfig, shard: Shard, barrier: Barrier) -> ShardOutcome:
    stop = StopSignal()
    undo = on_first_sigint(stop)
    deadline = arm_deadline(stop, config.deadline_s)
    try:
        return await run_shard(config, shard, stop, on_ready=lambda: barrier.wait(READY_TIMEOUT_S))
    finally:
        undo()
        if deadline is not None:
            deadline.cancel()


def _child(
    config: BenchConfig, index: int, barrier: Barrier, results: Queue[Message], parent: int
) -> None:
    parentdeath.die_with(parent)  # a killed client leaves no shard sending load
    shard = Shard(index=index, count=config.processes)
    try:
        results.put(("ok", run_loop(_child_main(config, shard, barrier))))
    except BaseException:  # the parent must hear of any death, not wait forever
        results.put(("error", f"shard {index}: {traceback.format_exc(limit=5)}"))


def _collect(procs: list[SpawnProcess], results: Queue[Message]) -> list[ShardOutcome]:
    outcomes: list[ShardOutcome] = []
    while len(outcomes) < len(procs):
        try:
            kind, value = results.get(timeout=POLL_S)
        except queue.Empty:
            if not any(p.is_alive() for p in procs):
                raise BenchError(
                    f"{len(procs) - len(outcomes)} client process(es) exited without a result"
                ) from None
            continue
        if isinstance(value, str):
            raise BenchError(f"client process failed: {value}")
        assert kind == "ok"
        outcomes.append(value)
    return outcomes


async def _forward_stop(stop: StopSignal, procs: list[SpawnProcess]) -> None:
    # A stop fired in the parent (deadline, a caller) reaches children as their Ctrl-C.
    await stop.event.wait()
    for p in procs:
        if p.is_alive() and p.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGINT)


async def run_sharded(config: BenchConfig, stop: StopSignal) -> list[ShardOutcome]:
    """Run ``config.processes`` shards in spawned processes; every shard's outcome.

    Raises BenchError when a shard process fails or dies.
    """
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(config.processes)
    results: Queue[Message] = ctx.Queue()
    procs = [
        ctx.Process(target=_child, args=(config, i, barrier, results, os.getpid()), daemon=True)
        for i in range(config.processes)
    ]
    for p in procs:
        p.start()
    forward = asyncio.ensure_future(_forward_stop(stop, procs))
    try:
        return await asyncio.to_thread(_collect, procs, results)
    finally:
        forward.cancel()
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
                p.join()
