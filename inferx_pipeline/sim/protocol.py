"""The OpenAI/vLLM wire format: request parsing and response bodies, as pure functions.

Request bodies are parsed by hand rather than with a strict model on purpose: real
clients send sampling fields (temperature, top_p, seed, ...) the simulator ignores,
and vLLM accepts them. Shapes follow vLLM's OpenAI-compatible server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from inferx_pipeline.tokens import Tokenizer

# The rendered chat prompt: one marker token opens and one closes every message, and
# one opens the assistant's turn (Qwen/ChatML shape), so template tokens are countable.
CHAT_OPEN = "<|im_start|>"
CHAT_CLOSE = "<|im_end|>"


class BadRequestError(ValueError):
    """The request is malformed or exceeds a limit; answered with HTTP ``status``."""

    def __init__(self, message: str, status: int = 400, kind: str = "BadRequestError") -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


@dataclass(frozen=True, slots=True)
class Generation:
    """A parsed completion or chat request: all the engine needs, in tokens."""

    chat: bool
    prompt_tokens: int
    max_tokens: int
    stream: bool
    include_usage: bool
    prompt: str = ""  # the prompt's text (a chat request's rendered); empty for token ids


def error_body(message: str, kind: str, status: int) -> dict[str, Any]:
    """vLLM's ErrorResponse: ``{"error": {"message", "type", "param", "code"}}``."""
    return {"error": {"message": message, "type": kind, "param": None, "code": status}}


def render_chat(messages: object) -> str:
    """The prompt text a chat request renders to (markers are one token each)."""
    if not isinstance(messages, list) or not messages:
        raise BadRequestError("'messages' must be a non-empty list of {role, content}")
    parts: list[str] = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise BadRequestError(f"messages[{index}]: expected an object with a string 'role'")
        parts.append(f"{CHAT_OPEN}{message['role']} {_content_text(message.get('content'))}")
        parts.append(CHAT_CLOSE)
    parts.append(f"{CHAT_OPEN}assistant")
    return " ".join(parts)


def _content_text(content: object) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    raise BadRequestError("message content must be a string or a list of text parts")


def prompt_text(prompt: object) -> str:
    """The text of a completions ``prompt`` (a string or a one-string batch); else empty."""
    if isinstance(prompt, list) and len(prompt) == 1:
        return prompt_text(prompt[0])
    return prompt if isinstance(prompt, str) else ""


def prompt_token_count(prompt: object, tokenizer: Tokenizer) -> int:
    """Tokens of a completions ``prompt``: a string, token ids, or a one-element batch."""
    if isinstance(prompt, str):
        return tokenizer.count(prompt)
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
        return len(prompt)
    if isinstance(prompt, list) and len(prompt) == 1:
        return prompt_token_count(prompt[0], tokenizer)
    raise BadRequestError(
        "'prompt' must be a string, a list of token ids, or a batch of exactly one; "
        "the simulator does not serve batched prompts"
    )


def parse_generation(
    body: object, chat: bool, tokenizer: Tokenizer, max_model_len: int, model_name: str
) -> Generation:
    """Parse a /v1/completions (``chat`` False) or /v1/chat/completions body.

    Raises BadRequestError: 400 for malformed bodies and context overflow (vLLM's
    message), 404 for an unknown model.
    """
    if not isinstance(body, dict):
        raise BadRequestError("request body must be a JSON object")
    model = body.get("model", model_name)
    if model != model_name:
        raise BadRequestError(
            f"The model `{model}` does not exist.", status=404, kind="NotFoundError"
        )
    if chat:
        text = render_chat(body.get("messages"))
        prompt_tokens = tokenizer.count(text)
    else:
        prompt_tokens = prompt_token_count(body.get("prompt"), tokenizer)
        text = prompt_text(body.get("prompt"))
    max_tokens = _max_tokens(body, prompt_tokens, max_model_len)
    options = body.get("stream_options") or {}
    return Generation(
        chat=chat,
        prompt_tokens=prompt_tokens,
        max_tokens=max_tokens,
        stream=bool(body.get("stream", False)),
        include_usage=isinstance(options, Mapping) and bool(options.get("include_usage")),
        prompt=text,
    )


def _max_tokens(body: Mapping[str, object], prompt_tokens: int, max_model_len: int) -> int:
    if prompt_tokens >= max_model_len:
        raise BadRequestError(
            f"This model's maximum context length is {max_model_len} tokens. However, your "
            f"request has {prompt_tokens} input tokens. Please reduce the length of the input "
            "messages."
        )
    wanted = body.get("max_completion_tokens", body.get("max_tokens"))
    if wanted is None:
        return max_model_len - prompt_tokens
    if not isinstance(wanted, int) or isinstance(wanted, bool) or wanted < 1:
        raise BadRequestError(f"max_tokens must be a positive integer; got {wanted!r}")
    if prompt_tokens + wanted > max_model_len:
        raise BadRequestError(
            f"'max_tokens' or 'max_completion_tokens' is too large: {wanted}. This model's "
            f"maximum context length is {max_model_len} tokens and your request has "
            f"{prompt_tokens} input tokens ({wanted} > {max_model_len} - {prompt_tokens})."
        )
    return wanted


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    """The ``usage`` object."""
    return {
        "prompt_tokens": prompt_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "completion_tokens": completion_tokens,
    }


def stream_chunk(
    gen: Generation,
    ident: str,
    created: int,
    model: str,
    text: str,
    first: bool,
    last: bool,
    finish_reason: str = "length",
) -> dict[str, Any]:
    """One SSE ``data:`` object carrying ``text`` (the tokens of one engine step); the
    last carries ``finish_reason`` (``length``: the budget ran out; ``stop``: the answer
    ended)."""
    finish = finish_reason if last else None
    if gen.chat:
        delta = {"role": "assistant", "content": text} if first else {"content": text}
        choice: dict[str, Any] = {
            "index": 0, "delta": delta, "logprobs": None, "finish_reason": finish
        }  # fmt: skip
        kind = "chat.completion.chunk"
    else:
        choice = {
            "index": 0, "text": text, "logprobs": None, "finish_reason": finish,
            "stop_reason": None,
        }  # fmt: skip
        kind = "text_completion"
    return {"id": ident, "object": kind, "created": created, "model": model, "choices": [choice]}


class SseFrames:
    """One streamed response's ``data:`` events, pre-rendered: per chunk only the text changes.

    Built from ``stream_chunk`` itself (rendered once per shape around a marker), so the
    bytes are exactly what ``orjson.dumps(stream_chunk(...))`` gives, at a fraction of
    the per-chunk cost.
    """

    _MARK = "\x00inferx-text\x00"

    def __init__(
        self, gen: Generation, ident: str, created: int, model: str, finish_reason: str = "length"
    ) -> None:
        marker = orjson.dumps(self._MARK)
        self._parts: dict[tuple[bool, bool], tuple[bytes, bytes]] = {}
        for first in (False, True):
            for last in (False, True):
                body = orjson.dumps(
                    stream_chunk(gen, ident, created, model, self._MARK, first, last, finish_reason)
                )
                head, tail = body.split(marker)
                self._parts[first, last] = (b"data: " + head, tail + b"\n\n")

    def event(self, text: str, first: bool, last: bool) -> bytes:
        """The SSE event carrying ``text``, terminated by its blank line."""
        head, tail = self._parts[first, last]
        return head + orjson.dumps(text) + tail


def usage_chunk(
    gen: Generation, ident: str, created: int, model: str, completion_tokens: int
) -> dict[str, Any]:
    """The final streamed chunk of ``include_usage``: ``choices`` empty, ``usage`` set."""
    kind = "chat.completion.chunk" if gen.chat else "text_completion"
    return {
        "id": ident, "object": kind, "created": created, "model": model, "choices": [],
        "usage": usage(gen.prompt_tokens, completion_tokens),
    }  # fmt: skip


def full_response(
    gen: Generation,
    ident: str,
    created: int,
    model: str,
    text: str,
    completion_tokens: int,
    finish_reason: str = "length",
) -> dict[str, Any]:
    """The non-streaming response body (``finish_reason`` as ``stream_chunk``'s)."""
    if gen.chat:
        choice: dict[str, Any] = {
            "index": 0, "message": {"role": "assistant", "content": text},
            "logprobs": None, "finish_reason": finish_reason,
        }  # fmt: skip
        kind = "chat.completion"
    else:
        choice = {
            "index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason,
            "stop_reason": None,
        }  # fmt: skip
        kind = "text_completion"
    return {
        "id": ident, "object": kind, "created": created, "model": model, "choices": [choice],
        "usage": usage(gen.prompt_tokens, completion_tokens),
    }  # fmt: skip


def tokenize_body(body: object, tokenizer: Tokenizer, max_model_len: int) -> dict[str, Any]:
    """vLLM's ``/tokenize`` answer for ``{"prompt": ...}`` or ``{"messages": [...]}``."""
    if not isinstance(body, dict):
        raise BadRequestError("request body must be a JSON object")
    if "messages" in body:
        text = render_chat(body["messages"])
    elif isinstance(body.get("prompt"), str):
        text = body["prompt"]
    else:
        raise BadRequestError("/tokenize needs a string 'prompt' or a 'messages' list")
    ids = tokenizer.encode(text)
    return {"count": len(ids), "max_model_len": max_model_len, "tokens": ids, "token_strs": None}


def words_text(words: Sequence[str], start: int, count: int) -> str:
    """``count`` output words from a cycle through ``words``, each with a leading space."""
    size = len(words)
    return "".join(" " + words[(start + i) % size] for i in range(count))
