"""The real-time driver's own schedule: intended ITL/TPOT from step deadlines, lateness."""

from __future__ import annotations

import aiohttp
import pytest

from inferx_pipeline.sim.core import build_core
from inferx_pipeline.sim.server import serve_in_background
from tests.sim.conftest import MakeConfig
from tests.sim.loopback import intended_tpot_s, metrics_samples, run

INT_ITL = "inferx_sim:intended_inter_token_latency_seconds"
INT_TPOT = "inferx_sim:intended_time_per_output_token_seconds"


def test_intended_times_are_the_step_deadlines_not_the_wake_ups(make_config: MakeConfig) -> None:
    config = make_config(time_scale=0.05)
    isl, osl, requests = 64, 12, 2

    async def scenario() -> dict[str, float]:
        async with serve_in_background(config) as url, aiohttp.ClientSession() as session:
            body = {"prompt": " ".join(["t1"] * isl), "max_tokens": osl, "stream": True}
            for _ in range(requests):  # one at a time: each sees exactly its own steps
                async with session.post(url + "/v1/completions", json=body) as resp:
                    assert resp.status == 200
                    await resp.read()
            return await metrics_samples(url)

    samples = run(scenario())
    assert samples[INT_ITL + "_count"] == requests * (osl - 1)
    assert samples[INT_TPOT + "_count"] == requests
    # Deadlines advance by exactly the priced step durations, however late the loop woke.
    tpot = intended_tpot_s(build_core(config), isl, osl)
    assert samples[INT_TPOT + "_sum"] / requests == pytest.approx(tpot, rel=1e-6)
    assert samples[INT_ITL + "_sum"] / samples[INT_ITL + "_count"] == pytest.approx(tpot, rel=1e-6)
    # One lateness sample per step: a prefill and osl - 1 decodes per request.
    assert samples["inferx_sim:step_lateness_seconds_count"] == requests * osl
