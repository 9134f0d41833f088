"""HTTP/1.1 streaming POSTs on asyncio protocols: the bench client's hot path.

Through aiohttp every streamed chunk costs a future, a task wake-up and several Python
layers (~30 us of CPU on a small VM). Here llhttp (``httptools``) parses in C inside
``data_received`` and hands body bytes straight to a ``BodySink`` with the read's
``perf_counter_ns`` stamp; the request's task wakes once, when the response ends.
Keep-alive connections are pooled per host like aiohttp's connector; a pooled
connection the server closed while idle is retried once on a fresh one.

Failures raise ``ConnectError``, ``DisconnectedError`` or ``TimeoutError`` (no byte for
the idle timeout, or the whole response longer than the total timeout); whatever the
sink raises (a malformed event) propagates unchanged and drops the connection.
"""

from __future__ import annotations

import asyncio
import math
import socket
import ssl
import time
from dataclasses import dataclass
from typing import Protocol, cast
from urllib.parse import urlsplit

import httptools

from inferx_pipeline.bench.records import NS_PER_S

CONNECT_TIMEOUT_S = 30.0
ERROR_BODY_BYTES = 64 * 1024  # enough for any error message; a runaway body is cut


class BodySink(Protocol):
    """Receives a 2xx response's body bytes with the time they were read."""

    def feed(self, data: bytes, now_ns: int) -> None: ...


class ConnectError(OSError):
    """No TCP (or TLS) connection could be made; the message is the OS's reason."""


class DisconnectedError(ConnectionError):
    """The server closed the connection before the response was complete."""


@dataclass(frozen=True, slots=True)
class Target:
    """Where to POST: parsed once per sender, with the request head's fixed part."""

    url: str
    host: str
    port: int
    tls: bool
    head: bytes  # request line and headers up to (not including) Content-Length

    @classmethod
    def parse(cls, url: str, accept: str = "text/event-stream") -> Target:
        """A target for an ``http(s)://host[:port]/path`` URL; ValueError for other schemes."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{url}: expected an http:// or https:// URL with a host")
        tls = parts.scheme == "https"
        port = parts.port or (443 if tls else 80)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            f"Content-Type: application/json\r\nAccept: {accept}\r\n"
        ).encode("latin-1")
        return cls(url, parts.hostname, port, tls, head)

    def request(self, body: bytes) -> bytes:
        """The whole request, head and body, for one write."""
        return self.head + b"Content-Length: %d\r\n\r\n" % len(body) + body


@dataclass(frozen=True, slots=True)
class Timeouts:
    """How long one response may take: silence between bytes, and in all (seconds)."""

    idle_s: float
    total_s: float = math.inf


@dataclass(frozen=True, slots=True)
class Reply:
    """A finished response: its status and, for non-2xx, the body (cut at 64 KiB)."""

    status: int
    error_body: bytes


class _Connection(asyncio.Protocol):
    """One keep-alive connection carrying one request at a time."""

    def __init__(self, timeouts: Timeouts) -> None:
        self._read_timeout_ns = int(timeouts.idle_s * NS_PER_S)
        self._total_s = timeouts.total_s
        self._deadline_ns = math.inf  # float: no total limit is an infinite deadline
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.received = False  # any byte of the current response
        self._parser: httptools.HttpResponseParser | None = None
        self._sink: BodySink | None = None
        self._done: asyncio.Future[Reply] | None = None
        self._status = 0
        self._error_body = bytearray()
        self._keep_alive = False
        self._now_ns = self._last_ns = 0
        self._watchdog: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses
        sock = transport.get_extra_info("socket")
        if sock is not None:  # one segment per SSE event, no Nagle delay on our request
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def send(self, data: bytes, sink: BodySink) -> asyncio.Future[Reply]:
        """Write one request; the future resolves when its response is complete."""
        assert self.transport is not None
        loop = asyncio.get_running_loop()
        self._parser = httptools.HttpResponseParser(self)
        self._sink, self._status, self.received = sink, 0, False
        self._error_body.clear()
        self._done = loop.create_future()
        self._last_ns = time.perf_counter_ns()
        self._deadline_ns = self._last_ns + self._total_s * NS_PER_S
        first_s = min(self._read_timeout_ns / NS_PER_S, self._total_s)
        self._watchdog = loop.call_later(first_s, self._check_silence)
        self.transport.write(data)
        return self._done

    def data_received(self, data: bytes) -> None:
        self._now_ns = self._last_ns = time.perf_counter_ns()
        self.received = True
        if self._parser is None:  # bytes outside any request: the stream is out of sync
            self.close()
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserCallbackError as err:  # the sink refused the body
            cause = err.__context__
            self._finish(cause if isinstance(cause, Exception) else err)
        except httptools.HttpParserError as err:
            self._finish(DisconnectedError(f"malformed HTTP response: {err}"))

    # httptools callbacks (looked up by name once, when the parser is built).
    def on_headers_complete(self) -> None:
        assert self._parser is not None
        self._status = self._parser.get_status_code()

    def on_body(self, body: bytes) -> None:
        if self._status < 300:
            assert self._sink is not None
            self._sink.feed(body, self._now_ns)
        elif len(self._error_body) < ERROR_BODY_BYTES:
            self._error_body += body

    def on_message_complete(self) -> None:
        assert self._parser is not None
        self._keep_alive = self._parser.should_keep_alive()
        self._finish(Reply(self._status, bytes(self._error_body)))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        reason = f": {exc}" if exc else ""
        self._finish(DisconnectedError(f"server closed the connection{reason}"))

    def _check_silence(self) -> None:
        now_ns = time.perf_counter_ns()
        if now_ns >= self._deadline_ns:
            self._finish(TimeoutError(f"response not complete after {self._total_s:g} s"))
            return
        left_ns = min(self._last_ns + self._read_timeout_ns, self._deadline_ns) - now_ns
        if left_ns > 0:  # one timer per silence period, not one reschedule per chunk
            self._watchdog = asyncio.get_running_loop().call_later(
                left_ns / NS_PER_S, self._check_silence
            )
            return
        self._finish(TimeoutError(f"no bytes for {self._read_timeout_ns / NS_PER_S:g} s"))

    def _finish(self, outcome: Reply | Exception) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        done, self._done, self._parser, self._sink = self._done, None, None, None
        if isinstance(outcome, Exception) or not self._keep_alive:
            self.close()
        if done is None or done.done():
            return
        if isinstance(outcome, Exception):
            done.set_exception(outcome)
        else:
            done.set_result(outcome)

    @property
    def reusable(self) -> bool:
        """Open, idle and allowed to carry another request."""
        return not self.closed and self._done is None and self._keep_alive

    def close(self) -> None:
        """Drop the connection (idempotent)."""
        self._keep_alive = False
        if self.transport is not None and not self.closed:
            self.transport.close()


class HttpClient:
    """Pools keep-alive connections per host; at most ``connections`` requests at once.

    ``async with HttpClient(n, timeouts) as client: await client.post(target, ...)``; a
    bare number of seconds is the idle timeout with no total limit.
    """

    def __init__(self, connections: int, timeouts: Timeouts | float) -> None:
        self._slots = asyncio.Semaphore(connections)
        self._timeouts = timeouts if isinstance(timeouts, Timeouts) else Timeouts(timeouts)
        self._idle: dict[tuple[str, int, bool], list[_Connection]] = {}
        self._all: set[_Connection] = set()
        self._tls: ssl.SSLContext | None = None

    async def post(self, target: Target, body: bytes, sink: BodySink) -> Reply:
        """POST ``body``; a 2xx body goes to ``sink`` as it arrives, others come back whole.

        Raises ConnectError, DisconnectedError, TimeoutError (connect, read silence longer
        than the idle timeout, or a response longer than the total), or what ``sink.feed``
        raised.
        """
        data = target.request(body)
        async with self._slots:
            conn, reused = await self._acquire(target)
            try:
                reply = await conn.send(data, sink)
            except DisconnectedError:
                if not (reused and not conn.received):
                    raise
                # The server closed the idle connection just as we reused it: retry once.
                conn = await self._connect(target)
                reply = await conn.send(data, sink)
            self._release(target, conn)
            return reply

    async def _acquire(self, target: Target) -> tuple[_Connection, bool]:
        idle = self._idle.get((target.host, target.port, target.tls), [])
        while idle:
            conn = idle.pop()
            if conn.reusable:
                return conn, True
            self._all.discard(conn)
        return await self._connect(target), False

    async def _connect(self, target: Target) -> _Connection:
        loop = asyncio.get_running_loop()
        tls = self._tls_context() if target.tls else None
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(
                    lambda: _Connection(self._timeouts),
                    target.host,
                    target.port,
                    ssl=tls,
                    server_hostname=target.host if tls else None,
                ),
                CONNECT_TIMEOUT_S,
            )
        except OSError as err:
            raise ConnectError(str(err) or type(err).__name__) from err
        self._all.add(conn)
        return conn

    def _tls_context(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = ssl.create_default_context()
        return self._tls

    def _release(self, target: Target, conn: _Connection) -> None:
        if conn.reusable:
            self._idle.setdefault((target.host, target.port, target.tls), []).append(conn)
        else:
            self._all.discard(conn)

    async def close(self) -> None:
        """Close every connection, idle or not."""
        for conn in self._all:
            conn.close()
        self._all.clear()
        self._idle.clear()
        await asyncio.sleep(0)  # lets the transports finish closing before the loop ends

    async def __aenter__(self) -> HttpClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
