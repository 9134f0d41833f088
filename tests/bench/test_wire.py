"""The lean HTTP/1.1 client: keep-alive reuse, stale-connection retry, silence, error bodies."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

from inferx_pipeline.bench.wire import DisconnectedError, HttpClient, Reply, Target

T = TypeVar("T")
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[None]]
SSE_OK = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"9\r\ndata: a\n\n\r\n" + b"9\r\ndata: b\n\n\r\n" + b"0\r\n\r\n"
)


class Sink:
    """Collects body bytes and their read stamps."""

    def __init__(self) -> None:
        self.data = b""
        self.stamps: list[int] = []

    def feed(self, data: bytes, now_ns: int) -> None:
        self.data += data
        self.stamps.append(now_ns)


async def _read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    fields = dict(line.lower().split(b": ", 1) for line in head.split(b"\r\n")[1:] if line)
    return head + await reader.readexactly(int(fields[b"content-length"]))


async def _with_server(handler: Handler, scenario: Callable[[str], Awaitable[T]]) -> tuple[T, int]:
    """Serve ``handler`` (told each connection's number) on loopback during ``scenario``."""
    connections = 0

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        try:
            await handler(reader, writer, connections)
        finally:
            writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        outcome = await scenario(f"http://127.0.0.1:{port}/v1/completions")
        return outcome, connections


async def _keep_alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: int) -> None:
    while not reader.at_eof():
        try:
            await _read_request(reader)
        except asyncio.IncompleteReadError:
            return
        writer.write(SSE_OK)
        await writer.drain()


def test_target_builds_the_request_head_and_rejects_other_schemes() -> None:
    target = Target.parse("http://h:81/v1/completions?x=1")
    assert (target.host, target.port, target.tls) == ("h", 81, False)
    assert target.request(b"{}").startswith(b"POST /v1/completions?x=1 HTTP/1.1\r\nHost: h:81\r\n")
    assert target.request(b"{}").endswith(b"Content-Length: 2\r\n\r\n{}")
    assert Target.parse("https://h/").port == 443
    with pytest.raises(ValueError, match="expected an http:// or https:// URL"):
        Target.parse("ftp://h/")


def test_sequential_requests_reuse_one_connection() -> None:
    async def scenario(url: str) -> list[bytes]:
        async with HttpClient(2, 5.0) as client:
            sinks = [Sink(), Sink()]
            for sink in sinks:
                assert await client.post(Target.parse(url), b"{}", sink) == Reply(200, b"")
            return [s.data for s in sinks]

    bodies, connections = asyncio.run(_with_server(_keep_alive, scenario))
    assert bodies == [b"data: a\n\ndata: b\n\n"] * 2
    assert connections == 1


def test_a_pooled_connection_closed_by_the_server_is_retried_once() -> None:
    async def first_answers_then_drops(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int
    ) -> None:
        await _read_request(reader)
        if number == 1:
            writer.write(SSE_OK)
            await writer.drain()
            await _read_request(reader)  # the reuse: closed without a byte of response
            return
        writer.write(SSE_OK)
        await writer.drain()

    async def scenario(url: str) -> bytes:
        async with HttpClient(1, 5.0) as client:
            await client.post(Target.parse(url), b"{}", Sink())
            sink = Sink()
            await client.post(Target.parse(url), b"{}", sink)
            return sink.data

    data, connections = asyncio.run(_with_server(first_answers_then_drops, scenario))
    assert data == b"data: a\n\ndata: b\n\n"
    assert connections == 2


def test_a_stream_cut_mid_body_is_disconnected_not_retried() -> None:
    async def cut(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: int) -> None:
        await _read_request(reader)
        writer.write(SSE_OK[: SSE_OK.index(b"9\r\ndata: b")])
        await writer.drain()

    async def scenario(url: str) -> str:
        async with HttpClient(1, 5.0) as client:
            with pytest.raises(DisconnectedError) as info:
                await client.post(Target.parse(url), b"{}", Sink())
            return str(info.value)

    message, connections = asyncio.run(_with_server(cut, scenario))
    assert message.startswith("server closed the connection")
    assert connections == 1


def test_silence_longer_than_the_read_timeout_fails() -> None:
    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: int) -> None:
        await _read_request(reader)
        writer.write(SSE_OK[: SSE_OK.index(b"9\r\n")])  # headers, then nothing
        await writer.drain()
        await reader.read()  # until the client gives up and closes

    async def scenario(url: str) -> str:
        async with HttpClient(1, 0.2) as client:
            with pytest.raises(TimeoutError) as info:
                await client.post(Target.parse(url), b"{}", Sink())
            return str(info.value)

    message, _ = asyncio.run(_with_server(stall, scenario))
    assert message == "no bytes for 0.2 s"


def test_non_2xx_body_comes_back_and_the_sink_sees_nothing() -> None:
    async def error(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: int) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 503 Busy\r\nContent-Length: 4\r\n\r\nbusy")
        await writer.drain()

    async def scenario(url: str) -> tuple[Reply, bytes]:
        sink = Sink()
        async with HttpClient(1, 5.0) as client:
            return await client.post(Target.parse(url), b"{}", sink), sink.data

    (reply, seen), _ = asyncio.run(_with_server(error, scenario))
    assert reply == Reply(503, b"busy") and seen == b""
