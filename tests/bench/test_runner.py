"""End to end against the test server (and a simulator process we kill): statuses, failure
rates, acceptance, stop, deadline."""

from __future__ import annotations

import asyncio
import math
import os
import signal
import subprocess

import pytest

from inferx_pipeline.bench.client import HttpSender, Request, open_session
from inferx_pipeline.bench.config import BenchConfig
from inferx_pipeline.bench.datasets import RandomSpec
from inferx_pipeline.bench.fake import FakeSender
from inferx_pipeline.bench.load import StopSignal
from inferx_pipeline.bench.loop import on_first_sigint
from inferx_pipeline.bench.records import RequestRecord
from inferx_pipeline.bench.result import RawResult
from inferx_pipeline.bench.runner import benchmark, run_benchmark
from inferx_pipeline.tokens import default_tokenizer
from tests.bench.conftest import SIM_MODEL, SimProcess
from tests.bench.server import TestServer, refused_url


def _config(url: str, **changes: object) -> BenchConfig:
    base: dict[str, object] = {
        "endpoint": url, "model": "m", "concurrency": 4,
        "dataset": RandomSpec(input_len=16, output_len=8),
    }  # fmt: skip
    return BenchConfig.model_validate(base | changes)


def test_ok_run_measures_every_request(server: TestServer) -> None:
    result = benchmark(_config(server.url, warmup=3))
    assert (result.status, result.completed, result.failed) == ("ok", 40, 0)
    assert len(server.counters.bodies) == 43  # warmup sent, not measured
    assert result.total_output_tokens == 40 * 8
    assert result.measured_isl_mean == 16 and result.measured_osl_mean == 8
    assert result.max_concurrent_requests <= 4
    assert result.acceptance is None  # the server exports no spec-decode counters
    assert result.stop_reason is None


def test_same_seed_sends_the_same_requests(server: TestServer) -> None:
    benchmark(_config(server.url, seed=11, num_prompts=8))
    first = sorted(b["prompt"] for b in server.counters.bodies)
    server.counters.bodies.clear()
    benchmark(_config(server.url, seed=11, num_prompts=8))
    assert sorted(b["prompt"] for b in server.counters.bodies) == first


def test_ten_percent_500s_fail_and_the_run_goes_on(server: TestServer) -> None:
    server.behaviour.fail_every = 10
    result = benchmark(_config(server.url, num_prompts=50))
    assert (result.completed, result.failed) == (45, 5)
    assert result.status == "ok" and not result.valid
    assert any("5 of 50 requests failed" in r for r in result.invalid_reasons)
    assert sum(1 for e in result.errors if e.startswith("HTTP 500 from")) == 5
    assert len(result.ttfts) == 50 and result.ttfts.count(0.0) == 5


def test_mid_stream_close_fails_those_requests_only(server: TestServer) -> None:
    server.behaviour.close_after = 3
    result = benchmark(_config(server.url, num_prompts=8))
    assert result.failed == 8 and result.status == "failed"
    server.behaviour.close_after = None
    assert benchmark(_config(server.url, num_prompts=8)).status == "ok"


class KillingSender:
    """Real HTTP, but SIGKILLs the server process the moment ``after`` requests completed.

    Nothing else runs between that completion and the kill (no await in between), so the
    requests still in flight are cut mid-stream and every later one finds no server.
    """

    def __init__(self, inner: HttpSender, process: subprocess.Popen[str], after: int) -> None:
        self.inner, self.process, self.after = inner, process, after
        self.completed = 0

    async def send(self, request: Request) -> RequestRecord:
        record = await self.inner.send(request)
        self.completed += record.ok
        if self.completed == self.after and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        return record


def test_server_killed_mid_run_fails_the_rest_and_the_run_goes_on(
    sim_process: SimProcess,
) -> None:
    config = _config(
        sim_process.url, model=SIM_MODEL, concurrency=2, num_prompts=12,
        dataset=RandomSpec(input_len=32, output_len=40),
    )  # fmt: skip

    async def measure() -> RawResult:
        async with open_session(2, 30.0) as session:
            count = default_tokenizer().count
            inner = HttpSender(session, config.endpoint, "completions", SIM_MODEL, {}, count)
            return await run_benchmark(config, sender=KillingSender(inner, sim_process.process, 4))

    result = asyncio.run(measure())
    assert sim_process.process.returncode == -signal.SIGKILL
    # The other stream in flight at the kill ends early unless its last bytes were already read.
    assert result.completed in (4, 5) and result.completed + result.failed == 12
    assert result.status == "ok" and not result.valid
    assert f"{result.failed} of 12 requests failed (more than 1%)" in result.invalid_reasons
    url = f"{sim_process.url}/v1/completions"
    failures = [e for e in result.errors if e]
    cut = [e for e in failures if e.startswith(f"{url} closed the stream after ")]
    refused = [e for e in failures if e.startswith(f"cannot connect to {url}: ")]
    # At most the one other stream was cut; every request sent after the kill is refused
    # (a pooled keep-alive connection to the dead server is retried once, then refused).
    assert len(cut) <= 1 and len(cut) + len(refused) == len(failures) == result.failed
    assert result.acceptance is None  # /metrics is gone after the run: no realized AL


def test_refused_connection_fails_the_run_with_the_reason() -> None:
    url = refused_url()
    result = benchmark(_config(url, num_prompts=3, concurrency=1))
    assert result.status == "failed" and not result.valid
    assert result.errors[0].startswith(f"cannot connect to {url}/v1/completions")
    assert "all 3 requests failed" in result.invalid_reasons


def test_acceptance_length_from_metrics_deltas(server: TestServer) -> None:
    server.behaviour.tokens_per_chunk = 3
    server.behaviour.draft_tokens = 2
    server.counters.drafts, server.counters.accepted = 100, 50  # before the run
    result = benchmark(_config(server.url, num_prompts=4, concurrency=2))
    # 8 tokens in chunks of 3, 3, 2 -> 3 drafts accepting 2, 2, 1 per request
    assert result.acceptance is not None
    assert result.acceptance.drafts == 12
    assert result.acceptance.accepted_tokens == 20
    assert result.acceptance.acceptance_length == pytest.approx(1 + 20 / 12)
    assert result.total_output_tokens == 32  # usage, not chunks


class StoppingSender(FakeSender):
    """Fires the run's stop (as Ctrl-C would) once ``after`` requests were sent."""

    def __init__(self, stop: StopSignal, after: int) -> None:
        super().__init__(ttft_s=0.002)
        self.stop, self.after = stop, after

    async def send(self, request: Request) -> RequestRecord:
        if len(self.sent) == self.after:
            self.stop.stop("interrupted")
        return await super().send(request)


def test_stop_signal_returns_incomplete_with_what_finished() -> None:
    stop = StopSignal()
    config = _config("http://fake", num_prompts=1000, concurrency=2, scrape_metrics=False)
    result = asyncio.run(run_benchmark(config, stop, sender=StoppingSender(stop, after=10)))
    assert (result.status, result.stop_reason) == ("incomplete", "interrupted")
    assert 8 <= result.completed <= 11
    assert any("stopped early (interrupted)" in r for r in result.invalid_reasons)


def test_deadline_stops_the_run() -> None:
    config = _config("http://fake", num_prompts=1000, deadline_s=0.05, scrape_metrics=False)
    result = asyncio.run(run_benchmark(config, sender=FakeSender(ttft_s=0.005)))
    assert (result.status, result.stop_reason) == ("incomplete", "deadline")
    assert result.completed < 1000


def test_open_loop_rate_is_recorded(server: TestServer) -> None:
    result = benchmark(_config(server.url, num_prompts=10, request_rate=200.0))
    assert result.request_rate == 200.0 and result.completed == 10
    assert not math.isinf(result.request_rate)


def test_first_ctrl_c_stops_gracefully_and_is_then_uninstalled() -> None:
    async def go() -> str:
        stop = StopSignal()
        undo = on_first_sigint(stop)
        try:
            os.kill(os.getpid(), signal.SIGINT)
            await asyncio.wait_for(stop.event.wait(), timeout=5)
            return stop.reason
        finally:
            undo()

    assert asyncio.run(go()) == "interrupted"
