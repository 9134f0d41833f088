"""Load shapes: closed-loop concurrency bound, seeded gamma arrivals, stop and warmup."""

from __future__ import annotations

import asyncio
import itertools
import statistics

from inferx_pipeline.bench import metrics
from inferx_pipeline.bench.client import Request
from inferx_pipeline.bench.fake import FakeSender
from inferx_pipeline.bench.load import FlatPlan, LoadShape, StopSignal, arrivals_s, run_requests
from inferx_pipeline.bench.records import RequestRecord

REQS = [Request(index=i, prompt="t1", prompt_len=1, max_tokens=2) for i in range(30)]


def arrival_offsets_s(shape: LoadShape, n: int) -> list[float]:
    return list(itertools.islice(arrivals_s(shape), n))


async def _send_all(sender: FakeSender, shape: LoadShape, stop: StopSignal) -> list[RequestRecord]:
    return (await run_requests(REQS, sender, shape, stop, shape.extent(len(REQS)))).records


def test_closed_loop_never_exceeds_concurrency_and_sends_all() -> None:
    records = asyncio.run(_send_all(FakeSender(ttft_s=0.002), LoadShape(5), StopSignal()))
    assert sorted(r.index for r in records) == list(range(30))
    assert metrics.max_concurrent(records) == 5


def test_arrivals_are_seeded_with_the_requested_mean_rate() -> None:
    shape = LoadShape(concurrency=10, request_rate=100.0, seed=3)
    a = arrival_offsets_s(shape, 2000)
    assert a == arrival_offsets_s(shape, 2000)
    assert a != arrival_offsets_s(LoadShape(concurrency=10, request_rate=100.0, seed=4), 2000)
    gaps = [y - x for x, y in itertools.pairwise(a)]
    assert abs(statistics.mean(gaps) - 0.01) < 0.001
    # Poisson: coefficient of variation ~1; burstiness 4 is far more regular
    assert 0.9 < statistics.stdev(gaps) / statistics.mean(gaps) < 1.1
    regular = arrival_offsets_s(LoadShape(10, 100.0, burstiness=4.0, seed=3), 2000)
    rgaps = [y - x for x, y in itertools.pairwise(regular)]
    assert statistics.stdev(rgaps) / statistics.mean(rgaps) < 0.6


def test_open_loop_respects_the_concurrency_cap() -> None:
    shape = LoadShape(concurrency=2, request_rate=10_000.0)
    records = asyncio.run(_send_all(FakeSender(ttft_s=0.003), shape, StopSignal()))
    assert len(records) == 30
    assert metrics.max_concurrent(records) <= 2


def test_stop_cancels_in_flight_and_keeps_finished() -> None:
    async def go() -> tuple[int, int]:
        stop = StopSignal()
        sender = FakeSender(ttft_s=0.01)
        asyncio.get_running_loop().call_later(0.035, stop.stop, "deadline")
        records = await _send_all(sender, LoadShape(concurrency=3), stop)
        return len(records), len(sender.sent)

    finished, sent = asyncio.run(go())
    assert 0 < finished < 30
    assert sent <= finished + 3  # at most one cancelled per worker


def test_warmup_requests_are_not_measured() -> None:
    plan = FlatPlan(warmup_requests=REQS[:4], requests=REQS[4:])
    sender = FakeSender()

    async def go() -> int:
        stop = StopSignal()
        await plan.warmup(sender, LoadShape(concurrency=2), stop)
        return len((await plan.measure(sender, LoadShape(concurrency=2), stop)).records)

    assert asyncio.run(go()) == 26
    assert len(sender.sent) == 30
