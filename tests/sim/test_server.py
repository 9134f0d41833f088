"""The HTTP surface: vLLM-shaped endpoints, loading, errors, injected faults and crashes."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from inferx_pipeline.sim.config import SimConfig
from inferx_pipeline.sim.server import serve_in_background
from tests.sim.conftest import MakeConfig
from tests.sim.loopback import metrics_samples, run, wait_for

WORDS_10 = " ".join(f"t{i}" for i in range(1, 11))


async def _post(session: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> tuple[int, Any]:
    async with session.post(url, json=body) as resp:
        return resp.status, await resp.json()


async def _sse(session: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> list[str]:
    async with session.post(url, json=body | {"stream": True}) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        text = (await resp.read()).decode()
    return [line[len("data: ") :] for line in text.split("\n\n") if line]


def test_health_is_503_until_the_load_time_has_passed(make_config: MakeConfig) -> None:
    config = make_config(load_time_s=0.3)

    async def scenario() -> None:
        async with serve_in_background(config) as url, aiohttp.ClientSession() as session:
            async with session.get(url + "/health") as resp:
                assert resp.status == 503
            status, body = await _post(session, url + "/v1/completions", {"prompt": "t1"})
            assert status == 503
            assert body["error"]["type"] == "ServiceUnavailableError"

            async def healthy() -> bool:
                async with session.get(url + "/health") as resp:
                    return resp.status == 200

            await wait_for(healthy, timeout_s=5.0)

    run(scenario())


def test_streamed_completion_has_vllm_chunks_usage_and_done(make_config: MakeConfig) -> None:
    config = make_config(time_scale=0.05)

    async def scenario() -> list[str]:
        async with serve_in_background(config) as url, aiohttp.ClientSession() as session:
            body = {"prompt": WORDS_10, "max_tokens": 7, "stream_options": {"include_usage": True}}
            return await _sse(session, url + "/v1/completions", body)

    events = run(scenario())
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    usage = chunks.pop()
    assert usage["choices"] == []
    assert usage["usage"] == {"prompt_tokens": 10, "total_tokens": 17, "completion_tokens": 7}
    assert len(chunks) == 7
    assert all(c["object"] == "text_completion" for c in chunks)
    assert [c["choices"][0]["finish_reason"] for c in chunks] == [None] * 6 + ["length"]
    text = "".join(c["choices"][0]["text"] for c in chunks)
    assert len(text.split()) == 7 and all(w.startswith("t") for w in text.split())


def test_chat_stream_and_plain_json(make_config: MakeConfig) -> None:
    config = make_config(time_scale=0.05, served_model_name="served")
    messages = [{"role": "user", "content": WORDS_10}]

    async def scenario() -> tuple[list[str], tuple[int, Any]]:
        async with serve_in_background(config) as url, aiohttp.ClientSession() as session:
            chat = url + "/v1/chat/completions"
            body = {"model": "served", "messages": messages, "max_tokens": 3}
            return await _sse(session, chat, body), await _post(session, chat, body)

    events, (status, full) = run(scenario())
    first = json.loads(events[0])
    assert first["object"] == "chat.completion.chunk"
    assert first["choices"][0]["delta"]["role"] == "assistant"
    assert events[-1] == "[DONE]" and len(events) == 4  # no usage chunk unless asked
    assert status == 200
    assert full["object"] == "chat.completion"
    assert full["usage"]["prompt_tokens"] == 10 + 3  # open + close marker + assistant turn
    assert len(full["choices"][0]["message"]["content"].split()) == 3


def test_context_overflow_is_a_vllm_400(make_config: MakeConfig) -> None:
    config = make_config(max_model_len=64)

    async def scenario() -> tuple[tuple[int, Any], tuple[int, Any]]:
        async with serve_in_background(config) as url, aiohttp.ClientSession() as session:
            completions = url + "/v1/completions"
            too_long = await _post(session, completions, {"prompt": WORDS_10, "max_tokens": 60})
            unknown = await _post(session, completions, {"model": "other", "prompt": "t1"})
            return too_long, unknown

    (status, body), (missing_status, missing) = run(scenario())
    assert status == 400
    assert body == {
        "error": {
            "message": "'max_tokens' or 'max_completion_tokens' is too large: 60. This model's "
            "maximum context length is 64 tokens and your request has 10 input tokens "
            "(60 > 64 - 10).",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        }
    }
    assert missing_status == 404
    assert missing["error"]["message"] == "The model `other` does not exist."


def test_models_and_tokenize(make_config: MakeConfig) -> None:
    config = make_config()

    async def scenario() -> tuple[Any, Any, Any]:
        async with serve_in_background(config) as url, aiohttp.ClientSession() as session:
            async with session.get(url + "/v1/models") as resp:
                models = await resp.json()
            _, prompt = await _post(session, url + "/tokenize", {"prompt": WORDS_10})
            chat = {"messages": [{"role": "user", "content": WORDS_10}]}
            _, rendered = await _post(session, url + "/tokenize", chat)
            return models, prompt, rendered

    models, prompt, rendered = run(scenario())
    assert models["data"][0]["id"] == "qwen3.8-27b"
    assert models["data"][0]["max_model_len"] == 4096
    assert prompt["count"] == 10 and prompt["tokens"] == list(range(1, 11))
    assert rendered["count"] == 13


def test_injected_errors_are_500s_at_the_configured_rate(make_config: MakeConfig) -> None:
    config = make_config(error_rate=0.3, time_scale=0.01, seed=4)

    async def scenario() -> list[int]:
        async with serve_in_background(config) as url, aiohttp.ClientSession() as session:
            body = {"prompt": "t1 t2", "max_tokens": 1}
            return [(await _post(session, url + "/v1/completions", body))[0] for _ in range(200)]

    statuses = run(scenario())
    assert set(statuses) == {200, 500}
    assert 0.2 < statuses.count(500) / len(statuses) < 0.4


def test_crash_cuts_streams_and_takes_health_down(make_config: MakeConfig) -> None:
    config = make_config(crash_after_tokens=5, time_scale=0.05)

    async def scenario() -> tuple[int, int, int]:
        async with serve_in_background(config) as url, aiohttp.ClientSession() as session:
            received = 0
            body = {"prompt": WORDS_10, "max_tokens": 50, "stream": True}
            with pytest.raises((aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError)):
                async with session.post(url + "/v1/completions", json=body) as resp:
                    async for line in resp.content:
                        received += line.startswith(b"data: {")
            async with session.get(url + "/health") as resp:
                health = resp.status
            status, _ = await _post(session, url + "/v1/completions", {"prompt": "t1"})
            return received, health, status

    received, health, status = run(scenario())
    assert received == 5
    assert health == 503
    assert status == 503


def test_bound_url_is_loopback_with_a_real_port(make_config: MakeConfig) -> None:
    config: SimConfig = make_config()

    async def scenario() -> str:
        async with serve_in_background(config) as url:
            return url

    url = run(scenario())
    assert url.startswith("http://127.0.0.1:")
    assert int(url.rsplit(":", 1)[1]) > 0


def test_client_leaving_mid_stream_frees_its_batch_slot(make_config: MakeConfig) -> None:
    config = make_config(time_scale=0.05)

    async def scenario() -> None:
        async with serve_in_background(config) as url, aiohttp.ClientSession() as session:
            body = {"prompt": WORDS_10, "max_tokens": 2000, "stream": True}
            async with session.post(url + "/v1/completions", json=body) as resp:
                await resp.content.readline()
                resp.close()

            async def drained() -> bool:
                samples = await metrics_samples(url)
                return (
                    samples["vllm:num_requests_running"] == 0
                    and samples["vllm:kv_cache_usage_perc"] == 0
                )

            await wait_for(drained, timeout_s=5.0)

    run(scenario())
