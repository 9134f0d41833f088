"""Share one run's load across client processes and merge their request records.

One Python process times streams accurately up to a chunk rate (see
``benchmarks/client_overhead.py``); past it, shard k of P sends every P-th request
with 1/P of the concurrency and rate. Processes start measuring together (a
barrier after building prompts); ``perf_counter_ns`` is one machine-wide
monotonic clock, so records merge before any statistic is computed.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing as mp
import os
import queue
import signal
import traceback
from multiprocessing.context import SpawnProcess
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier

from inferx_pipeline import parentdeath
from inferx_pipeline.bench.assemble import ShardOutcome
from inferx_pipeline.bench.config import BenchConfig
from inferx_pipeline.bench.datasets import Shard
from inferx_pipeline.bench.load import StopSignal
from inferx_pipeline.errors import BenchError

# Building prompts for a big shard takes seconds; a shard that never gets ready is dead.
READY_TIMEOUT_S = 300.0
POLL_S = 0.2
Message = tuple[str, ShardOutcome | str]


async def _child_main(config: BenchConfig, shard: Shard, barrier: Barrier) -> ShardOutcome:
    from inferx_pipeline.bench.runner import arm_deadline, on_first_sigint, run_shard

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
    from inferx_pipeline.bench.runner import run_loop

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
