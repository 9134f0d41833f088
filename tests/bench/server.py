"""A purpose-built OpenAI-compatible SSE server for the client's tests (in-process, port 0).

It streams with controlled timings and misbehaves on demand: 500s every k-th
request, malformed SSE, a connection closed mid-stream, no usage chunk. It runs on
its own thread and event loop so sync ``benchmark()`` calls can measure it.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web


@dataclass
class Behaviour:
    """How the server answers; tests change it between runs."""

    ttft_s: float = 0.0
    itl_s: float = 0.0
    fail_every: int = 0  # every k-th request answers HTTP 500
    malformed_after: int | None = None  # chunks before a garbage event
    close_after: int | None = None  # chunks before dropping the connection
    usage: bool = True
    tokens_per_chunk: int = 1
    draft_tokens: int = 0  # > 0: export speculative-decoding counters


@dataclass
class Counters:
    """What the server saw (bodies in arrival order) and its /metrics counters."""

    bodies: list[dict[str, Any]] = field(default_factory=list)
    drafts: int = 0
    accepted: int = 0


def _prompt_tokens(body: dict[str, Any]) -> int:
    if "messages" in body:
        return sum(len(m["content"].split()) for m in body["messages"])
    return len(str(body["prompt"]).split())


def _chunk(body: dict[str, Any], text: str) -> bytes:
    choice: dict[str, Any] = {"index": 0, "finish_reason": None}
    if "messages" in body:
        choice["delta"] = {"content": text}
    else:
        choice["text"] = text
    return b"data: " + orjson.dumps({"id": "x", "choices": [choice]}) + b"\n\n"


class TestServer:
    """``with TestServer() as s: s.url``; ``s.behaviour`` and ``s.counters`` are live."""

    __test__ = False  # not a pytest class

    def __init__(self) -> None:
        self.behaviour = Behaviour()
        self.counters = Counters()
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.counters.bodies.append(body)
        b = self.behaviour
        if b.fail_every and len(self.counters.bodies) % b.fail_every == 0:
            return web.json_response({"error": "injected failure"}, status=500)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await asyncio.sleep(b.ttft_s)
        chunks = -(-body["max_tokens"] // b.tokens_per_chunk)
        for i in range(chunks):
            if i == b.malformed_after:
                await resp.write(b"data: {not json\n\n")
            if i == b.close_after:
                assert request.transport is not None
                request.transport.close()
                return resp
            if i:
                await asyncio.sleep(b.itl_s)
            start = i * b.tokens_per_chunk
            n = min(b.tokens_per_chunk, body["max_tokens"] - start)
            await resp.write(_chunk(body, " ".join(f"t{start + j + 1}" for j in range(n)) + " "))
            if b.draft_tokens:
                self.counters.drafts += 1
                self.counters.accepted += n - 1
        if b.usage:
            usage = {"prompt_tokens": _prompt_tokens(body), "completion_tokens": body["max_tokens"]}
            await resp.write(b"data: " + orjson.dumps({"choices": [], "usage": usage}) + b"\n\n")
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def _metrics(self, request: web.Request) -> web.Response:
        c, k = self.counters, self.behaviour.draft_tokens
        lines = ["# TYPE vllm:num_requests_running gauge", "vllm:num_requests_running 0"]
        if k:
            for name, value in (
                ("num_drafts", c.drafts),
                ("num_draft_tokens", c.drafts * k),
                ("num_accepted_tokens", c.accepted),
            ):
                lines += [
                    f"# TYPE vllm:spec_decode_{name} counter",
                    f'vllm:spec_decode_{name}_total{{model_name="m"}} {value}',
                ]
        return web.Response(text="\n".join(lines) + "\n")

    async def _start(self) -> str:
        app = web.Application()
        app.router.add_post("/v1/completions", self._stream)
        app.router.add_post("/v1/chat/completions", self._stream)
        app.router.add_get("/metrics", self._metrics)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        await web.SockSite(self._runner, sock).start()
        return f"http://127.0.0.1:{sock.getsockname()[1]}"

    def __enter__(self) -> TestServer:
        self._thread.start()
        self.url = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


def refused_url() -> str:
    """A loopback URL nothing listens on (a port bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def serve() -> Iterator[TestServer]:
    """Fixture body: a fresh server per test."""
    with TestServer() as server:
        yield server
