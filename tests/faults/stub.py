"""A misbehaving OpenAI-compatible endpoint on loopback: raw HTTP/1.1, one shape per run.

Each request gets a 200 event stream whose body is ``events`` (SSE ``data:`` payloads),
then, by ``ending``: ``done`` ([DONE] and a clean end), ``silence`` (the connection held
open with no byte), ``trickle`` (a comment line every ``TRICKLE_S``, never an end) or
``close`` (the socket closed mid-stream). It runs on its own thread and event loop.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from typing import Literal

Ending = Literal["done", "silence", "trickle", "close"]
TRICKLE_S = 0.05
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


@dataclass(frozen=True)
class Shape:
    """What every response carries."""

    events: tuple[bytes, ...]
    ending: Ending = "done"


class StubServer:
    """``with StubServer(shape) as stub: stub.url``; ``stub.requests`` counts arrivals."""

    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        self.url = ""
        self.requests = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._open.add(writer)
        try:
            while not reader.at_eof():
                head = await reader.readuntil(b"\r\n\r\n")
                if not head.startswith(b"POST "):  # /metrics and the like: there are none
                    writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                    continue
                fields = dict(f.lower().split(b": ", 1) for f in head.split(b"\r\n")[1:] if f)
                await reader.readexactly(int(fields[b"content-length"]))
                self.requests += 1
                if not await self._respond(writer):
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            self._open.discard(writer)
            writer.close()

    async def _respond(self, writer: asyncio.StreamWriter) -> bool:
        """Write one response; False when the connection must not carry another."""
        writer.write(HEAD)
        for event in self.shape.events:
            writer.write(_chunk(b"data: " + event + b"\n\n"))
        await writer.drain()
        ending = self.shape.ending
        if ending == "done":
            writer.write(_chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
            await writer.drain()
            return True
        if ending == "trickle":
            while True:  # until the client gives up and the write fails
                writer.write(_chunk(b": keep-alive\n\n"))
                await writer.drain()
                await asyncio.sleep(TRICKLE_S)
        if ending == "silence":
            await asyncio.Event().wait()  # held open until the server closes
        return False

    async def _start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def _stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._open):
            writer.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def __enter__(self) -> StubServer:
        self._thread.start()
        self.url = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
