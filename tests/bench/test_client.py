"""HTTP client: request bodies, SSE parsing, and each bad-endpoint error as one clear line."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from inferx_pipeline.bench.client import (
    HttpSender,
    Request,
    SseReader,
    StreamError,
    base_url,
    open_session,
    request_body,
)
from inferx_pipeline.bench.records import RequestRecord
from tests.bench.server import TestServer, refused_url

REQ = Request(index=0, prompt="t1 t2 t3", prompt_len=3, max_tokens=4)


def _send(url: str, request: Request = REQ, api: str = "completions") -> RequestRecord:
    async def go() -> RequestRecord:
        async with open_session(4, 10.0) as session:
            sender = HttpSender(session, url, api, "m", {}, lambda text: len(text.split()))  # type: ignore[arg-type]  # api literal from a test parameter
            return await sender.send(request)

    return asyncio.run(go())


def test_base_url_accepts_v1_and_slashes() -> None:
    assert base_url("http://h:1/v1/") == base_url("http://h:1/") == "http://h:1"


def test_completions_body_asks_exact_length_and_usage() -> None:
    body = orjson.loads(request_body("completions", "m", REQ, {}))
    assert body["prompt"] == "t1 t2 t3"
    assert body["max_tokens"] == 4
    assert body["ignore_eos"] is True
    assert body["stream_options"] == {"include_usage": True}


def test_chat_body_carries_template_kwargs_and_messages() -> None:
    body = orjson.loads(request_body("chat", "m", REQ, {"enable_thinking": False}))
    assert body["messages"] == [{"role": "user", "content": "t1 t2 t3"}]
    assert body["chat_template_kwargs"] == {"enable_thinking": False}


def test_sse_reader_handles_split_lines_and_usage_only_chunk() -> None:
    record = RequestRecord(index=0, prompt_len=1, max_tokens=2)
    reader = SseReader(record, "completions", "u")
    reader.feed(b'data: {"choices":[{"text":"a"}]}\n\ndata: {"choi', 10)
    reader.feed(b'ces":[{"text":"b"}]}\n\ndata: {"choices":[],"usage":', 20)
    reader.feed(b'{"prompt_tokens":5,"completion_tokens":2}}\n\ndata: [DONE]\n\n', 30)
    assert record.chunk_ns == [10, 20]  # the usage-only chunk is not a token chunk
    assert (record.output_tokens, record.prompt_tokens) == (2, 5)
    assert reader.done and reader.text() == "ab"


def test_chat_deltas_of_reasoning_and_content_are_all_generated_text() -> None:
    record = RequestRecord(index=0, prompt_len=1, max_tokens=3)
    reader = SseReader(record, "chat", "u")
    reader.feed(b'data: {"choices":[{"delta":{"reasoning":"r1"}}]}\n\n', 1)
    reader.feed(b'data: {"choices":[{"delta":{"reasoning_content":"r2"}}]}\n\n', 2)
    reader.feed(b'data: {"choices":[{"delta":{"content":"c","reasoning":null}}]}\n\n', 3)
    assert record.chunk_ns == [1, 2, 3] and reader.text() == "r1r2c"


def test_sse_error_event_fails_the_request() -> None:
    reader = SseReader(RequestRecord(index=0, prompt_len=1, max_tokens=1), "chat", "u")
    with pytest.raises(StreamError, match="error event from u: overloaded"):
        reader.feed(b'data: {"error": "overloaded"}\n', 1)


def test_streams_and_times_chunks(server: TestServer) -> None:
    server.behaviour.itl_s = 0.01
    record = _send(server.url)
    assert record.ok, record.error
    assert len(record.chunk_ns) == 4
    assert record.output_tokens == 4 and record.prompt_tokens == 3
    assert len(record.itls_s) == 3 and record.ttft_s > 0
    assert record.text.split() == ["t1", "t2", "t3", "t4"]


def test_chat_endpoint(server: TestServer) -> None:
    record = _send(server.url, api="chat")
    assert record.ok and record.text.split() == ["t1", "t2", "t3", "t4"]
    assert server.counters.bodies[0]["messages"][0]["content"] == "t1 t2 t3"


def test_missing_usage_falls_back_to_counting_text(server: TestServer) -> None:
    server.behaviour.usage = False
    record = _send(server.url)
    assert record.ok and record.output_tokens == 4 and record.prompt_tokens is None


def test_refused_connection(server: TestServer) -> None:
    url = refused_url()
    record = _send(url)
    assert not record.ok
    assert record.error.startswith(f"cannot connect to {url}/v1/completions:")
    assert record.error.endswith("is the server up on that port?")


def test_non_2xx_carries_status_and_body(server: TestServer) -> None:
    server.behaviour.fail_every = 1
    record = _send(server.url)
    assert record.error == (
        f'HTTP 500 from {server.url}/v1/completions: {{"error": "injected failure"}}'
    )


def test_malformed_sse(server: TestServer) -> None:
    server.behaviour.malformed_after = 2
    record = _send(server.url)
    assert not record.ok
    assert record.error == (
        f"malformed SSE from {server.url}/v1/completions: got b'{{not json'; "
        "expected a JSON object or [DONE] after 'data:'"
    )
    assert len(record.chunk_ns) == 2


def test_server_closing_mid_stream(server: TestServer) -> None:
    server.behaviour.close_after = 2
    record = _send(server.url)
    assert not record.ok
    assert f"{server.url}/v1/completions" in record.error
    assert "after 2 chunks" in record.error
