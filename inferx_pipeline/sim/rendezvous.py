"""A worker spanning several nodes: rank 0 waits for the other ranks, which follow it.

The simulated engine runs in rank 0 (``--tp`` already counts every rank's GPUs); the
other ranks only stand in for their processes' lifetimes, so a launcher sees what a real
multi-node engine does: rank 0 is not ready until every rank joined, a rank that dies
takes the worker down, and ranks > 0 exit when the leader goes away.

The wire format is one line each way over TCP: the follower sends ``rank R``, the leader
answers ``ok`` or ``error: ...``; then the connection stays open, silent, for as long
as both live, and its closing is the signal.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

from inferx_pipeline.errors import SimError

JOIN_DEADLINE_S = 120.0  # how long a follower retries reaching its leader
_RETRY_S = 0.2


class Rendezvous:
    """Rank 0's side: accepts ranks 1..nnodes-1; ``on_lost(reason)`` when one leaves."""

    def __init__(self, nnodes: int, on_lost: Callable[[str], None]) -> None:
        self.nnodes = nnodes
        self.on_lost = on_lost
        self.port = 0
        self._joined: dict[int, asyncio.StreamWriter] = {}
        self._server: asyncio.Server | None = None
        self._closing = False

    @property
    def complete(self) -> bool:
        """True once every other rank has joined."""
        return len(self._joined) == self.nnodes - 1

    async def start(self, host: str, port: int) -> None:
        """Listen on ``host``/``port`` (0 = free; the bound one is in ``port``)."""
        self._server = await asyncio.start_server(self._handle, host, port)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        """Stop listening and drop every follower (they exit: their leader went away)."""
        self._closing = True
        for writer in self._joined.values():
            writer.close()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        rank = _parse_rank(await reader.readline())
        problem = self._refusal(rank)
        if problem is not None or rank is None:
            writer.write(f"error: {problem}\n".encode())
            writer.close()
            return
        self._joined[rank] = writer
        writer.write(b"ok\n")
        with contextlib.suppress(ConnectionError):
            await writer.drain()
            while await reader.read(4096):  # followers send nothing more; EOF = it died
                pass
        if not self._closing:
            self.on_lost(
                f"rank {rank} ({peer[0]}:{peer[1]}) left the worker: its connection closed"
            )

    def _refusal(self, rank: int | None) -> str | None:
        if rank is None or not 1 <= rank < self.nnodes:
            return f"expected 'rank R' with 1 <= R < {self.nnodes}"
        if rank in self._joined:
            return f"rank {rank} has already joined"
        return None


def _parse_rank(line: bytes) -> int | None:
    words = line.decode(errors="replace").split()
    if len(words) == 2 and words[0] == "rank" and words[1].isdigit():
        return int(words[1])
    return None


async def follow_leader(
    rank: int, addr: str, port: int, stop: asyncio.Event, deadline_s: float = JOIN_DEADLINE_S
) -> None:
    """Join the leader at ``addr``:``port`` as ``rank`` and stay until ``stop`` is set.

    Raises SimError when the leader cannot be reached within ``deadline_s``, refuses the
    rank, or goes away (its connection closes), so the process exits non-zero.
    """
    reader, writer = await _connect(rank, addr, port, deadline_s)
    try:
        writer.write(f"rank {rank}\n".encode())
        await writer.drain()
        answer = (await reader.readline()).decode(errors="replace").strip()
        if answer.startswith("error"):
            raise SimError(f"rank {rank}: the leader at {addr}:{port} refused it: {answer}")
        eof = asyncio.create_task(reader.read())  # the leader never sends more: returns at EOF
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait({eof, stopped}, return_when=asyncio.FIRST_COMPLETED)
        for task in (eof, stopped):
            task.cancel()
        if not stop.is_set():
            raise SimError(f"rank {rank}: the leader at {addr}:{port} went away")
    finally:
        writer.close()


async def _connect(
    rank: int, addr: str, port: int, deadline_s: float
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            return await asyncio.open_connection(addr, port)
        except OSError as err:
            if time.monotonic() >= deadline:
                raise SimError(
                    f"rank {rank}: could not reach the leader at {addr}:{port} within "
                    f"{deadline_s:g} s ({err}); start rank 0 or check --master-addr/--master-port"
                ) from err
            await asyncio.sleep(_RETRY_S)
