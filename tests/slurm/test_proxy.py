"""The replica proxy on loopback against real aiohttp upstreams: a replica that dies mid-stream."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator

import pytest
from aiohttp import web

from inferx_pipeline.launch.slurm_proxy import RoundRobinProxy

DEADLINE_S = 10.0
FIRST = b"data: first\n\n"


async def _dies_mid_stream(request: web.Request) -> web.StreamResponse:
    reply = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await reply.prepare(request)
    await reply.write(FIRST)
    assert request.transport is not None
    request.transport.abort()  # the replica's process is gone: no last chunk, no more bytes
    return reply


class Upstream:
    """An aiohttp server on 127.0.0.1 in its own thread, serving ``handler`` on every path."""

    def __init__(self, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.handler = handler
        self.runner: web.AppRunner | None = None

    def start(self) -> str:
        self.thread.start()
        return asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(DEADLINE_S)

    async def _start(self) -> str:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handler)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        host, port = self.runner.addresses[0][:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        if self.runner is not None:
            asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(DEADLINE_S)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(DEADLINE_S)
        self.loop.close()


@pytest.fixture
def dying() -> Iterator[str]:
    upstream = Upstream(_dies_mid_stream)
    url = upstream.start()
    yield url
    upstream.stop()


def _raw_get(base_url: str, path: str) -> bytes:
    """Every byte the proxy sends for one GET, until it closes the connection."""
    host, port = base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=DEADLINE_S) as conn:
        conn.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
    return received


def test_a_replica_dying_mid_stream_cuts_the_reply_never_a_second_status(dying: str) -> None:
    proxy = RoundRobinProxy([dying])
    try:
        received = _raw_get(proxy.start(), "/v1/completions")
    finally:
        proxy.stop()
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), received
    assert b"HTTP/1.1" not in body and b"502" not in body, received  # no fresh status
    assert not body.endswith(b"0\r\n\r\n"), received  # no last chunk: the client sees it cut


def test_a_replica_that_never_answers_is_a_502(dying: str) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    proxy = RoundRobinProxy([closed])
    try:
        received = _raw_get(proxy.start(), "/v1/completions")
    finally:
        proxy.stop()
    assert received.startswith(b"HTTP/1.1 502"), received
