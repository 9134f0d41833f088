"""One streamed request to an OpenAI-compatible endpoint, timed chunk by chunk.

``Sender`` is the boundary: ``HttpSender`` speaks HTTP through ``bench.wire`` (a lean
HTTP/1.1 client: the SSE reader runs inside the socket's read callback); the fake in
``inferx_pipeline.bench.fake`` stands in for it in tests of the load shapes. A
sender never raises for a bad response: the error goes into the record as one
line (where, what, expected) and the run goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import orjson

from inferx_pipeline.bench.records import RequestRecord
from inferx_pipeline.bench.wire import (
    ConnectError,
    DisconnectedError,
    HttpClient,
    Target,
    Timeouts,
)

Api = Literal["chat", "completions"]
Message = dict[str, str]
PATHS: dict[Api, str] = {"chat": "/v1/chat/completions", "completions": "/v1/completions"}
ERROR_BODY_CHARS = 500


@dataclass(frozen=True, slots=True)
class Request:
    """What to send: a prompt (text for completions, messages for chat) and its lengths."""

    index: int
    prompt: str | tuple[Message, ...]
    prompt_len: int
    max_tokens: int
    session_id: str | None = None
    turn: int | None = None

    def record(self) -> RequestRecord:
        """An empty record for this request."""
        return RequestRecord(
            index=self.index,
            prompt_len=self.prompt_len,
            max_tokens=self.max_tokens,
            session_id=self.session_id,
            turn=self.turn,
        )


class Sender(Protocol):
    """Sends one request and returns what was measured (never raises for the response)."""

    async def send(self, request: Request) -> RequestRecord: ...


class StreamError(Exception):
    """The response broke the streaming protocol; the message is the record's error."""


def base_url(endpoint: str) -> str:
    """``http://host:port`` from an endpoint given with or without ``/v1`` or a slash."""
    url = endpoint.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def request_body(
    api: Api, model: str, request: Request, chat_template_kwargs: Mapping[str, Any]
) -> bytes:
    """The JSON body: exact output length (``ignore_eos``), streaming with usage."""
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens,
        "ignore_eos": True,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if api == "chat":
        prompt = request.prompt
        body["messages"] = (
            [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
        )
        if chat_template_kwargs:
            body["chat_template_kwargs"] = dict(chat_template_kwargs)
    elif isinstance(request.prompt, str):
        body["prompt"] = request.prompt
    else:
        # A conversation sent to the raw completions API: its turns, concatenated.
        body["prompt"] = " ".join(m["content"] for m in request.prompt)
    return orjson.dumps(body)


_DELTA_TEXT_KEYS = ("reasoning", "reasoning_content", "content")


class SseReader:
    """Parses SSE ``data:`` lines into a record, timestamping each read once."""

    def __init__(self, record: RequestRecord, api: Api, url: str) -> None:
        self.record = record
        self.url = url
        self.done = False
        self._pieces: list[str] = []
        self._rest = b""
        self._text_key = "delta" if api == "chat" else "text"

    def feed(self, data: bytes, now_ns: int) -> None:
        """Consume bytes that arrived at ``now_ns``; raises StreamError on a bad event."""
        lines = (self._rest + data).split(b"\n")
        self._rest = lines.pop()
        for line in lines:
            if line.startswith(b"data:"):
                self._event(line[5:].strip(), now_ns)

    def _event(self, payload: bytes, now_ns: int) -> None:
        if payload == b"[DONE]":
            self.done = True
            return
        try:
            event = orjson.loads(payload)
        except orjson.JSONDecodeError as err:
            raise self._malformed(payload, "a JSON object or [DONE] after 'data:'") from err
        if not isinstance(event, dict):
            raise self._malformed(payload, "a JSON object")
        if "error" in event:
            raise StreamError(f"error event from {self.url}: {str(event['error'])[:200]}")
        choices = event.get("choices", [])
        if not isinstance(choices, list):
            raise self._malformed(payload, "choices as a list")
        if choices:
            self.record.chunk_ns.append(now_ns)
            self._pieces.append(self._piece(choices[0], payload))
        if usage := event.get("usage"):
            self._usage(usage, payload)

    def _usage(self, usage: object, payload: bytes) -> None:
        if not isinstance(usage, dict):
            raise self._malformed(payload, "usage as an object")
        completion, prompt = usage.get("completion_tokens"), usage.get("prompt_tokens")
        if not all(v is None or (isinstance(v, int) and v >= 0) for v in (completion, prompt)):
            raise self._malformed(payload, "token counts in usage as non-negative integers")
        self.record.output_tokens = completion or 0
        self.record.prompt_tokens = prompt or None

    def _piece(self, choice: object, payload: bytes) -> str:
        if not isinstance(choice, dict):
            raise self._malformed(payload, "each choice as an object")
        if self._text_key == "delta":
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):
                raise self._malformed(payload, "delta as an object")
            # Thinking arrives as `reasoning` (vLLM >= 0.32 with --reasoning-parser) or
            # `reasoning_content` (SGLang, older vLLM); the answer as `content`.
            return "".join(str(delta.get(key) or "") for key in _DELTA_TEXT_KEYS)
        return str(choice.get("text") or "")

    def _malformed(self, payload: bytes, expected: str) -> StreamError:
        return StreamError(
            f"malformed SSE from {self.url}: got {payload[:80]!r}; expected {expected}"
        )

    def text(self) -> str:
        """Everything generated so far."""
        return "".join(self._pieces)


class HttpSender:
    """Streams requests over one client session; ``count`` tokenizes when usage is absent."""

    def __init__(
        self,
        session: HttpClient,
        endpoint: str,
        api: Api,
        model: str,
        chat_template_kwargs: Mapping[str, Any],
        count_tokens: Callable[[str], int],
    ) -> None:
        self._session = session
        self.url = base_url(endpoint) + PATHS[api]
        self._target = Target.parse(self.url)
        self._api: Api = api
        self._model = model
        self._kwargs = dict(chat_template_kwargs)
        self._count = count_tokens

    async def send(self, request: Request) -> RequestRecord:
        """Send ``request``; failures are recorded in ``record.error``, never raised."""
        record = request.record()
        reader = SseReader(record, self._api, self.url)
        body = request_body(self._api, self._model, request, self._kwargs)
        record.start_ns = time.perf_counter_ns()
        try:
            await self._stream(body, reader)
        except StreamError as err:
            record.error = str(err)
        except ConnectError as err:
            record.error = f"cannot connect to {self.url}: {err}; is the server up on that port?"
        except (DisconnectedError, OSError) as err:  # OSError: reset while writing the request
            record.error = (
                f"{self.url} closed the stream after {len(record.chunk_ns)} chunks: "
                f"{type(err).__name__}: {err}"
            )
        except TimeoutError as err:
            record.error = f"request to {self.url} failed: {type(err).__name__}: {err}"
        record.end_ns = time.perf_counter_ns()
        record.text = reader.text()
        if record.ok and not record.output_tokens:
            record.output_tokens = self._count(record.text)
        return record

    async def _stream(self, body: bytes, reader: SseReader) -> None:
        reply = await self._session.post(self._target, body, reader)
        if reply.status >= 300:
            text = reply.error_body.decode(errors="replace")[:ERROR_BODY_CHARS]
            raise StreamError(f"HTTP {reply.status} from {self.url}: {text.strip()}")
        if not reader.done:
            raise StreamError(
                f"{self.url} ended the stream before [DONE] after "
                f"{len(reader.record.chunk_ns)} chunks"
            )


def open_session(connections: int, timeouts: Timeouts) -> HttpClient:
    """A session for ``connections`` concurrent streams (``async with`` it); a request
    fails after ``timeouts.idle_s`` seconds without a byte or ``timeouts.total_s`` in all."""
    return HttpClient(connections, timeouts)
