"""Disaggregated prefill/decode: the routers' handoff fields and the KV that moves between workers.

Two router protocols, as sglang-router 0.3.2 and vllm-router 0.1.14 speak them:

- SGLang bootstrap: the router sends the same body to a prefill and a decode worker at
  once, with ``bootstrap_host``/``bootstrap_port``/``bootstrap_room`` added; the room keys
  the KV. The decode may ask for it before the prefill even received its copy, so a
  fetch waits for the key to be published.
- vLLM: the router sends the prefill ``max_tokens 1`` and ``kv_transfer_params`` with
  ``do_remote_decode``; the prefill answers with ``kv_transfer_params`` naming itself
  (``remote_host``/``remote_port``) and a fresh ``remote_request_id`` that keys the KV;
  the router copies that object into the decode's request.

A prefill worker publishes each prompt's KV on a ``KvBoard`` once its prefill has run;
its bootstrap server (``GET /kv/{key}``) hands it out once and forgets it. A decode
worker fetches it (``fetch_kv``) and then waits the simulated transfer time.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

KV_WAIT_S = 600.0  # simulated seconds a fetch waits for its prefill to finish
MIN_KV_WAIT_WALL_S = 30.0  # HTTP and Python overheads do not shrink with --time-scale
KV_EXPIRY_S = 600.0  # wall seconds a published KV nobody fetched is kept
_PRUNE_EVERY_S = 1.0
_BLOCK_TOKENS = 16


class KvTransferError(RuntimeError):
    """A request's KV could not be handed over; ``status`` is the HTTP answer to give."""

    def __init__(self, message: str, status: int = 502) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Handoff:
    """Where a decode request's prompt KV waits: ``key`` on the prefill's bootstrap server."""

    host: str
    port: int
    key: str

    @property
    def worker(self) -> str:
        """The prefill worker's bootstrap address, as error messages name it."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def url(self) -> str:
        """The bootstrap server's URL for this KV."""
        return f"http://{self.worker}/kv/{self.key}"


@dataclass(frozen=True, slots=True)
class PrefillTicket:
    """A prefill-role request's KV key; ``vllm`` when the answer must carry kv_transfer_params."""

    key: str
    vllm: bool


@dataclass(frozen=True, slots=True)
class Kv:
    """One prompt's KV as the bootstrap server describes it: tokens and whole bytes."""

    tokens: int
    kv_bytes: float


def prefill_ticket(body: Mapping[str, Any], fresh_id: Callable[[], str]) -> PrefillTicket | None:
    """The KV key a prefill worker publishes under, or None for a plain request."""
    room = body.get("bootstrap_room")
    if room is not None:
        return PrefillTicket(str(room), vllm=False)
    params = body.get("kv_transfer_params")
    if isinstance(params, Mapping) and params.get("do_remote_decode"):
        return PrefillTicket(fresh_id(), vllm=True)
    return None


def decode_handoff(body: Mapping[str, Any]) -> Handoff | None:
    """Where a decode worker fetches the request's KV, or None: it prefills itself."""
    if body.get("bootstrap_room") is not None and body.get("bootstrap_host"):
        return Handoff(
            str(body["bootstrap_host"]), int(body["bootstrap_port"]), str(body["bootstrap_room"])
        )
    params = body.get("kv_transfer_params")
    if isinstance(params, Mapping) and params.get("do_remote_prefill"):
        host, port, key = (
            params.get(k) for k in ("remote_host", "remote_port", "remote_request_id")
        )
        if host and port and key:
            return Handoff(str(host), int(port), str(key))
    return None


def vllm_transfer_params(
    ticket: PrefillTicket, host: str, port: int, engine_id: str, prompt_tokens: int, tp: int
) -> dict[str, Any]:
    """The ``kv_transfer_params`` a vLLM prefill answers with (NixlConnector's shape)."""
    return {
        "do_remote_prefill": True,
        "do_remote_decode": False,
        "remote_block_ids": list(range(math.ceil(prompt_tokens / _BLOCK_TOKENS))),
        "remote_engine_id": engine_id,
        "remote_host": host,
        "remote_port": port,
        "remote_request_id": ticket.key,
        "tp_size": tp,
    }


@dataclass(slots=True)
class _Entry:
    done: asyncio.Event = field(default_factory=asyncio.Event)
    kv: Kv | None = None
    error: str | None = None
    settled_at: float = 0.0


class KvBoard:
    """The prefill worker's published KV, by key; each entry is handed out once.

    ``take`` may come before ``publish`` (SGLang sends both workers the request at once)
    and waits up to ``wait_s`` wall seconds. Entries nobody fetched are dropped
    ``expiry_s`` after they were settled, so memory stays bounded.
    """

    def __init__(self, wait_s: float, expiry_s: float = KV_EXPIRY_S) -> None:
        self.wait_s = wait_s
        self.expiry_s = expiry_s
        self._entries: dict[str, _Entry] = {}
        self._pruned_at = time.monotonic()

    def __len__(self) -> int:
        return len(self._entries)

    def publish(self, key: str, kv: Kv) -> None:
        """The prefill of ``key`` is done; its KV can be fetched."""
        self._settle(key).kv = kv

    def fail(self, key: str, reason: str) -> None:
        """The prefill of ``key`` will never finish; a fetch gets ``reason``."""
        self._settle(key).error = reason

    async def take(self, key: str) -> Kv:
        """Wait for ``key`` and remove it; KvTransferError on timeout or a failed prefill."""
        entry = self._entries.setdefault(key, _Entry())
        try:
            await asyncio.wait_for(entry.done.wait(), self.wait_s)
        except TimeoutError as err:
            message = f"no prefill published KV {key} within {self.wait_s:g} s"
            raise KvTransferError(message, status=404) from err
        finally:
            if self._entries.get(key) is entry:
                del self._entries[key]
        if entry.kv is None:
            raise KvTransferError(f"the prefill of KV {key} failed: {entry.error}", status=500)
        return entry.kv

    def _settle(self, key: str) -> _Entry:
        now = time.monotonic()
        self._prune(now)
        entry = self._entries.setdefault(key, _Entry())
        entry.settled_at = now
        entry.done.set()
        return entry

    def _prune(self, now: float) -> None:
        if now - self._pruned_at < _PRUNE_EVERY_S:
            return
        self._pruned_at = now
        stale = [
            key
            for key, entry in self._entries.items()
            if entry.done.is_set() and now - entry.settled_at > self.expiry_s
        ]
        for key in stale:
            del self._entries[key]


def bootstrap_app(board: KvBoard, on_sent: Callable[[Kv], None]) -> web.Application:
    """The prefill's bootstrap server: ``GET /kv/{key}`` -> ``{"tokens", "bytes"}``, once.

    404 when no prefill published the key in time, 500 when its prefill failed.
    """

    async def kv(request: web.Request) -> web.Response:
        key = request.match_info["key"]
        try:
            found = await board.take(key)
        except KvTransferError as err:
            return web.json_response({"error": str(err)}, status=err.status)
        on_sent(found)
        return web.json_response({"tokens": found.tokens, "bytes": found.kv_bytes})

    app = web.Application()
    app.add_routes([web.get("/kv/{key}", kv)])
    return app


@contextlib.asynccontextmanager
async def serving_bootstrap(app: web.Application, host: str, port: int) -> AsyncIterator[int]:
    """Serve the bootstrap ``app`` on ``host``/``port`` (0 = free); yields the bound port."""
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        yield int(runner.addresses[0][1])
    finally:
        await runner.cleanup()


async def fetch_kv(session: aiohttp.ClientSession, handoff: Handoff, timeout_s: float) -> Kv:
    """GET the KV of ``handoff`` from its prefill worker; KvTransferError naming the worker."""
    where = f"KV transfer from prefill worker {handoff.worker} (bootstrap {handoff.url})"
    try:
        timeout = aiohttp.ClientTimeout(total=timeout_s)
        async with session.get(handoff.url, timeout=timeout) as resp:
            if resp.status != 200:
                text = (await resp.text())[:300]
                raise KvTransferError(f"{where} failed: HTTP {resp.status}: {text}")
            body = await resp.json()
    except (aiohttp.ClientError, TimeoutError) as err:
        raise KvTransferError(f"{where} failed: {type(err).__name__}: {err}") from err
    try:
        return Kv(int(body["tokens"]), float(body["bytes"]))
    except (KeyError, TypeError, ValueError) as err:
        raise KvTransferError(f"{where} failed: unexpected answer {body!r}") from err
