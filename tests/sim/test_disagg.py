"""Disaggregated prefill/decode: both routers' protocols between in-process simulators."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from inferx_pipeline.sim.config import SimConfig
from inferx_pipeline.sim.disagg import Kv, KvBoard, KvTransferError, decode_handoff
from inferx_pipeline.sim.server import SimServer, serve_in_background
from tests.sim.conftest import MakeConfig
from tests.sim.loopback import metrics_samples, run

VLLM_PREFILL_PARAMS = {
    "do_remote_decode": True, "do_remote_prefill": False, "remote_block_ids": None,
    "remote_engine_id": None, "remote_host": None, "remote_port": None,
}  # fmt: skip
COMPUTED = "inferx_sim:prefill_computed_tokens_total"
RECEIVED = "inferx_sim:kv_transfer_received_tokens_total"
RECEIVED_BYTES = "inferx_sim:kv_transfer_received_bytes_total"
SENT = "inferx_sim:kv_transfer_sent_tokens_total"
SECONDS = "inferx_sim:kv_transfer_seconds_total"


def free_port() -> int:
    """A TCP port nothing listens on right now (loopback)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _words(count: int) -> str:
    return " ".join(f"t{i}" for i in range(count))


@contextlib.asynccontextmanager
async def _pair(
    make_config: MakeConfig, **overrides: Any
) -> AsyncIterator[tuple[str, SimServer, str]]:
    """A prefill and a decode simulator: (prefill URL, prefill server, decode URL)."""
    prefill = SimServer(make_config(role="prefill", bootstrap_port=0, **overrides))
    decode_config: SimConfig = make_config(role="decode", **overrides)
    async with (
        serve_in_background(prefill.config, prefill) as prefill_url,
        serve_in_background(decode_config) as decode_url,
    ):
        yield prefill_url, prefill, decode_url


async def _post(session: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> Any:
    async with session.post(url, json=body) as resp:
        assert resp.status == 200, await resp.text()
        return await resp.json()


def test_sglang_bootstrap_protocol_moves_the_kv(make_config: MakeConfig) -> None:
    async def scenario() -> None:
        async with _pair(make_config, time_scale=0.05) as (prefill_url, prefill, decode_url):
            before_p, before_d = (
                await metrics_samples(prefill_url),
                await metrics_samples(decode_url),
            )
            body = {
                "messages": [{"role": "user", "content": _words(200)}],
                "max_completion_tokens": 9, "ignore_eos": True, "no_stop_trim": True,
                "separate_reasoning": True, "return_hidden_states": False,
                "bootstrap_host": "127.0.0.1", "bootstrap_port": prefill.bootstrap_port,
                "bootstrap_room": 2144361353254916939,
            }  # fmt: skip
            async with aiohttp.ClientSession() as session:
                chat = "/v1/chat/completions"
                decoded, _ = await asyncio.gather(
                    _post(session, decode_url + chat, body),
                    _post(session, prefill_url + chat, body),
                )
            after_p, after_d = await metrics_samples(prefill_url), await metrics_samples(decode_url)
        prompt = decoded["usage"]["prompt_tokens"]
        assert decoded["usage"]["completion_tokens"] == 9
        assert after_d[COMPUTED] == before_d[COMPUTED]
        assert after_d[RECEIVED] - before_d[RECEIVED] == prompt
        assert after_d[RECEIVED_BYTES] - before_d[RECEIVED_BYTES] == prompt * 65536
        assert after_p[COMPUTED] - before_p[COMPUTED] == prompt
        assert after_p[SENT] - before_p[SENT] == prompt
        assert after_p["vllm:generation_tokens_total"] == 1
        assert len(prefill.board or ()) == 0  # fetched entries are dropped

    run(scenario())


async def _vllm_roundtrip(
    session: aiohttp.ClientSession, prefill_url: str, decode_url: str, body: dict[str, Any]
) -> tuple[dict[str, Any], float]:
    """vllm-router's two legs; returns the prefill's kv_transfer_params and the decode TTFT."""
    leg = body | {"max_tokens": 1, "stream": False, "kv_transfer_params": VLLM_PREFILL_PARAMS}
    params = (await _post(session, prefill_url + "/v1/completions", leg))["kv_transfer_params"]
    start = time.perf_counter()
    streamed = body | {"stream": True, "kv_transfer_params": params}
    async with session.post(decode_url + "/v1/completions", json=streamed) as resp:
        assert resp.status == 200, await resp.text()
        await resp.content.readline()
        ttft = time.perf_counter() - start
        events = (await resp.read()).decode()
    chunks = [line for line in events.split("\n\n") if line.strip().startswith("data: {")]
    assert len(chunks) == body["max_tokens"] - 1  # the first one was read for the TTFT
    return params, ttft


def test_vllm_protocol_moves_the_kv(make_config: MakeConfig) -> None:
    async def scenario() -> None:
        async with _pair(make_config, time_scale=0.05) as (prefill_url, prefill, decode_url):
            async with aiohttp.ClientSession() as session:
                body = {"prompt": _words(300), "max_tokens": 5}
                params, _ = await _vllm_roundtrip(session, prefill_url, decode_url, body)
            samples_p, samples_d = (
                await metrics_samples(prefill_url),
                await metrics_samples(decode_url),
            )
        assert params["do_remote_prefill"] is True
        assert params["remote_host"] == "127.0.0.1"
        assert params["remote_port"] == prefill.bootstrap_port
        assert params["remote_request_id"] and params["remote_engine_id"]
        assert samples_d[COMPUTED] == 0 and samples_d[RECEIVED] == 300
        assert samples_p[COMPUTED] == 300 and samples_p[SENT] == 300

    run(scenario())


def test_transfer_time_grows_with_the_prompt(make_config: MakeConfig) -> None:
    async def scenario() -> tuple[list[float], list[float]]:
        ttfts, seconds = [], []
        async with (
            _pair(make_config, time_scale=1.0) as (prefill_url, _, decode_url),
            aiohttp.ClientSession() as session,
        ):
            for words in (50, 3500):
                body = {"prompt": _words(words), "max_tokens": 2}
                before = (await metrics_samples(decode_url))[SECONDS]
                _, ttft = await _vllm_roundtrip(session, prefill_url, decode_url, body)
                ttfts.append(ttft)
                seconds.append((await metrics_samples(decode_url))[SECONDS] - before)
        return ttfts, seconds

    ttfts, seconds = run(scenario())
    assert ttfts[0] < ttfts[1]
    assert seconds[1] == pytest.approx(seconds[0] * 3500 / 50)
    assert seconds[1] == pytest.approx(3500 * 65536 / 50e9)  # one H100's 50 GB/s NIC


def test_unreachable_prefill_is_named_in_the_error(make_config: MakeConfig) -> None:
    port = free_port()

    async def scenario() -> tuple[int, dict[str, Any]]:
        config = make_config(role="decode", time_scale=0.05)
        body = {
            "prompt": _words(20), "max_tokens": 3,
            "bootstrap_host": "127.0.0.1", "bootstrap_port": port, "bootstrap_room": 7,
        }  # fmt: skip
        async with (
            serve_in_background(config) as url,
            aiohttp.ClientSession() as session,
            session.post(url + "/v1/completions", json=body) as resp,
        ):
            return resp.status, await resp.json()

    status, body = run(scenario())
    assert status == 502
    assert f"prefill worker 127.0.0.1:{port}" in body["error"]["message"]


def test_requests_without_handoff_fields_are_served_whole(make_config: MakeConfig) -> None:
    async def scenario() -> list[dict[str, float]]:
        async with _pair(make_config, time_scale=0.05) as (prefill_url, _, decode_url):
            async with aiohttp.ClientSession() as session:
                for url in (prefill_url, decode_url):
                    done = await _post(
                        session, url + "/v1/completions", {"prompt": _words(40), "max_tokens": 4}
                    )
                    assert done["usage"]["completion_tokens"] == 4
                    async with session.get(url + "/server_info") as resp:
                        info = json.loads(await resp.text())
                        assert info["disaggregation_mode"] == info["role"]
            return [await metrics_samples(u) for u in (prefill_url, decode_url)]

    for samples in run(scenario()):
        assert samples[COMPUTED] == 40 and samples[RECEIVED] == 0


def test_board_hands_out_once_and_reports_failed_prefills() -> None:
    async def scenario() -> None:
        board = KvBoard(wait_s=5.0)
        waiting = asyncio.create_task(board.take("room"))
        await asyncio.sleep(0)  # the fetch arrives before the prefill publishes
        board.publish("room", Kv(10, 640.0))
        assert await waiting == Kv(10, 640.0)
        assert len(board) == 0
        board.fail("gone", "aborted")
        with pytest.raises(KvTransferError, match="aborted") as err:
            await board.take("gone")
        assert err.value.status == 500
        with pytest.raises(KvTransferError, match="within"):
            await KvBoard(wait_s=0.01).take("never")

    run(scenario())


def test_decode_handoff_reads_both_protocols() -> None:
    sglang = decode_handoff(
        {"bootstrap_host": "10.0.0.1", "bootstrap_port": 9, "bootstrap_room": 5}
    )
    assert sglang is not None and sglang.url == "http://10.0.0.1:9/kv/5"
    params = {
        "do_remote_prefill": True,
        "remote_host": "::1",
        "remote_port": 8,
        "remote_request_id": "r",
    }
    vllm = decode_handoff({"kv_transfer_params": params})
    assert vllm is not None and vllm.url == "http://[::1]:8/kv/r"
    assert decode_handoff({"kv_transfer_params": VLLM_PREFILL_PARAMS}) is None
    assert decode_handoff({"prompt": "x"}) is None


ROUTERS = {
    "sglang_router": ["--pd-disaggregation", "--prefill", "{prefill}", "{bootstrap}"],
    "vllm_router": ["--vllm-pd-disaggregation", "--prefill", "{prefill}"],
}


@pytest.mark.parametrize("router", sorted(ROUTERS))
def test_a_real_router_in_front_of_the_pair(make_config: MakeConfig, router: str) -> None:
    pytest.importorskip(router)

    async def scenario() -> tuple[dict[str, Any], dict[str, float]]:
        async with _pair(make_config, time_scale=0.05) as (prefill_url, prefill, decode_url):
            port = free_port()
            fields = {"prefill": prefill_url, "bootstrap": str(prefill.bootstrap_port)}
            args = [arg.format(**fields) for arg in ROUTERS[router]]
            args += ["--decode", decode_url, "--host", "127.0.0.1", "--port", str(port)]
            args += ["--prometheus-port", str(free_port()), "--policy", "round_robin"]
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", f"{router}.launch_router", *args,
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
            )  # fmt: skip
            try:
                answer = await _through_router(f"http://127.0.0.1:{port}")
            finally:
                process.kill()
                await process.wait()
            return answer, await metrics_samples(decode_url)

    answer, decode = run(scenario())
    assert answer["usage"]["completion_tokens"] == 6
    assert decode[COMPUTED] == 0 and decode[RECEIVED] == answer["usage"]["prompt_tokens"]


async def _through_router(url: str, timeout_s: float = 30.0) -> dict[str, Any]:
    """A chat completion through the router, retried until it answers 200 or the deadline."""
    body = {"model": "qwen3.8-27b", "messages": [{"role": "user", "content": _words(30)}]}
    deadline = time.perf_counter() + timeout_s
    async with aiohttp.ClientSession() as session:
        while True:
            with contextlib.suppress(aiohttp.ClientError):
                async with session.post(
                    url + "/v1/chat/completions", json=body | {"max_tokens": 6}
                ) as resp:
                    if resp.status == 200:
                        return dict(await resp.json())
            assert time.perf_counter() < deadline, (
                f"router at {url} did not answer in {timeout_s} s"
            )
            await asyncio.sleep(0.1)
