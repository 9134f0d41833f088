"""A loopback round-robin proxy over engine replicas: data parallel behind one client URL.

Requests go to the replicas in turn, streamed both ways (SSE passes through as it comes).
A replica that fails before answering is a 502; one that fails once its reply has
begun cuts the client's connection, so the client sees a truncated stream, never a
second status inside the first reply.
``/health`` answers 200 only when every replica does; ``/metrics`` is the replicas'
Prometheus text with the samples of each series summed (right for counters, which the
sweep reads as deltas; a gauge such as KV usage becomes the replicas' sum).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Sequence

import aiohttp
from aiohttp import web

from inferx_pipeline.errors import LaunchError

START_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = 5.0
HEALTH_PATH = "/health"
METRICS_PATH = "/metrics"
# Hop-by-hop and framing headers: aiohttp sets its own on each side.
_DROPPED = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "content-encoding"}
)


def merge_metrics(texts: Sequence[str]) -> str:
    """Prometheus texts with each series' samples summed; comments from the first (pure)."""
    comments: list[str] = []
    totals: dict[str, float] = {}
    for index, text in enumerate(texts):
        for line in text.splitlines():
            if line.startswith("#"):
                if index == 0:
                    comments.append(line)
                continue
            series, _, value = line.rpartition(" ")
            if not series:
                continue
            try:
                totals[series] = totals.get(series, 0.0) + float(value)
            except ValueError:
                continue
    samples = [f"{series} {value!r}" for series, value in totals.items()]
    return "\n".join(comments + samples) + "\n"


class RoundRobinProxy:
    """Serves on 127.0.0.1 (a free port) from its own thread until ``stop()``."""

    def __init__(self, upstreams: Sequence[str]) -> None:
        self.upstreams = tuple(u.rstrip("/") for u in upstreams)
        self._turn = itertools.cycle(self.upstreams)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="slurm-proxy", daemon=True
        )
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    def start(self) -> str:
        """Start serving; the proxy's base URL."""
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        try:
            return future.result(START_TIMEOUT_S)
        except (OSError, TimeoutError) as err:
            self.stop()
            raise LaunchError(f"replica proxy could not start: {err}") from err

    async def _start(self) -> str:
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT_S)
        self._session = aiohttp.ClientSession(timeout=timeout, auto_decompress=False)
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        host, port = self._runner.addresses[0][:2]
        return f"http://{host}:{port}"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.path == HEALTH_PATH:
            codes = await asyncio.gather(*(self._status(u + HEALTH_PATH) for u in self.upstreams))
            ok = all(200 <= code < 300 for code in codes)
            return web.Response(status=200 if ok else 503, text=" ".join(map(str, codes)))
        if request.path == METRICS_PATH:
            texts = await asyncio.gather(*(self._text(u + METRICS_PATH) for u in self.upstreams))
            return web.Response(text=merge_metrics(texts), content_type="text/plain")
        return await self._forward(request, next(self._turn))

    async def _status(self, url: str) -> int:
        assert self._session is not None  # set in _start, before the first request
        try:
            async with self._session.get(url) as answer:
                return answer.status
        except (aiohttp.ClientError, OSError):
            return 502

    async def _text(self, url: str) -> str:
        assert self._session is not None
        try:
            async with self._session.get(url) as answer:
                return await answer.text() if answer.status == 200 else ""
        except (aiohttp.ClientError, OSError):
            return ""

    async def _forward(self, request: web.Request, upstream: str) -> web.StreamResponse:
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _DROPPED}
        reply: web.StreamResponse | None = None
        try:
            async with self._session.request(
                request.method,
                upstream + request.path_qs,
                headers=headers,
                data=await request.read(),
            ) as answer:
                reply = web.StreamResponse(
                    status=answer.status,
                    headers={k: v for k, v in answer.headers.items() if k.lower() not in _DROPPED},
                )
                await reply.prepare(request)
                async for chunk in answer.content.iter_any():
                    await reply.write(chunk)
                await reply.write_eof()
                return reply
        except (aiohttp.ClientError, OSError) as err:
            if reply is None or not reply.prepared:
                return web.Response(status=502, text=f"replica {upstream}: {err}")
            # The status is sent and part of the body with it: end the connection without
            # the last chunk (aiohttp's write_eof then finds it closed and sends nothing).
            if request.transport is not None:
                request.transport.abort()
            return reply

    def stop(self) -> None:
        """Stop serving and end the thread (idempotent)."""
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(START_TIMEOUT_S)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(START_TIMEOUT_S)
        if not self._loop.is_closed() and not self._loop.is_running():
            self._loop.close()

    async def _close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()
