"""Helpers for client-vs-simulator tests: run a simulator in-process, measure it, poll it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import aiohttp

from inferx_pipeline.bench.config import BenchConfig
from inferx_pipeline.bench.datasets import RandomSpec
from inferx_pipeline.bench.prometheus import parse
from inferx_pipeline.bench.result import RawResult
from inferx_pipeline.bench.runner import run_benchmark
from inferx_pipeline.sim.config import SimConfig
from inferx_pipeline.sim.core import EngineCore
from inferx_pipeline.sim.roofline import StepLoad, attn_pairs
from inferx_pipeline.sim.server import SimServer, serve_in_background

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run one test coroutine on a fresh event loop."""
    return asyncio.run(coro)


async def wait_for(check: Callable[[], Awaitable[bool]], timeout_s: float = 10.0) -> None:
    """Poll ``check`` until it returns True; AssertionError at the deadline."""
    deadline = time.perf_counter() + timeout_s
    while not await check():
        if time.perf_counter() > deadline:
            raise AssertionError(f"condition not met within {timeout_s} s")
        await asyncio.sleep(0.01)


async def metrics_samples(base_url: str) -> dict[str, float]:
    """``/metrics`` as sample name -> value summed over labels."""
    async with aiohttp.ClientSession() as session, session.get(base_url + "/metrics") as resp:
        return parse(await resp.text()).samples


async def measure(
    config: SimConfig, isl: int, osl: int, concurrency: int, num_prompts: int
) -> tuple[RawResult, dict[str, float]]:
    """Benchmark a fresh in-process simulator with the real client; result + final metrics."""
    server = SimServer(config)
    async with serve_in_background(config, server) as base_url:
        bench = BenchConfig(
            endpoint=base_url,
            model=config.model_name,
            dataset=RandomSpec(input_len=isl, output_len=osl),
            concurrency=concurrency,
            num_prompts=num_prompts,
        )
        result = await run_benchmark(bench)
        return result, await metrics_samples(base_url)


def intended_ttft_s(core: EngineCore, isl: int) -> float:
    """The simulator's intended prefill step for one ``isl``-token prompt, scaled seconds."""
    load = StepLoad(tokens=isl, kv_tokens=isl, attn_pairs=attn_pairs(0, isl))
    return core.price(load).total_s * core.config.time_scale


def intended_tpot_s(core: EngineCore, isl: int, osl: int) -> float:
    """Mean intended decode step of one sequence over its ``osl - 1`` decodes, scaled seconds."""
    steps = [
        core.price(StepLoad(1, isl + g, attn_pairs(isl + g - 1, 1))).total_s for g in range(1, osl)
    ]
    return sum(steps) / len(steps) * core.config.time_scale
