"""Run one benchmark: ``await run_benchmark(config)`` or ``benchmark(config)`` from sync code.

The run never raises for what the endpoint does (refused, 500s, broken streams):
those requests fail and the result says so (``status: failed`` when all did). It
raises only for a wrong setup (unreadable tokenizer, trace or validity file).
"""

from __future__ import annotations

import asyncio
import time

from inferx_pipeline.bench.assemble import RunTimes, ShardOutcome, build_result
from inferx_pipeline.bench.client import Sender
from inferx_pipeline.bench.config import BenchConfig
from inferx_pipeline.bench.datasets import Shard
from inferx_pipeline.bench.load import StopSignal
from inferx_pipeline.bench.loop import arm_deadline, on_first_sigint, run_loop
from inferx_pipeline.bench.prometheus import MetricsSnapshot, acceptance, scrape
from inferx_pipeline.bench.result import RawResult
from inferx_pipeline.bench.shard import run_shard, run_sharded
from inferx_pipeline.bench.validity import ValidityRules, load_rules
from inferx_pipeline.errors import BenchError, EndpointError
from inferx_pipeline.settings import Settings
from inferx_pipeline.tokens import load_tokenizer


def rules_for(config: BenchConfig) -> ValidityRules:
    """The config's validity rules, else the project's ``catalog/bench-validity.yaml``."""
    return load_rules(config.validity_file or Settings().catalog_dir / "bench-validity.yaml")


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


async def _interruptible(config: BenchConfig) -> RawResult:
    stop = StopSignal()
    undo = on_first_sigint(stop)
    try:
        return await run_benchmark(config, stop)
    finally:
        undo()


def benchmark(config: BenchConfig) -> RawResult:
    """Sync wrapper of ``run_benchmark``; Ctrl-C returns what was measured, incomplete."""
    return run_loop(_interruptible(config))
