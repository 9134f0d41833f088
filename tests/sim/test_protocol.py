"""Request parsing, the context-length rules and the pre-rendered SSE frames, without HTTP."""

from __future__ import annotations

import orjson
import pytest

from inferx_pipeline.sim.protocol import (
    BadRequestError,
    Generation,
    SseFrames,
    parse_generation,
    render_chat,
    stream_chunk,
)
from inferx_pipeline.tokens import default_tokenizer

TOK = default_tokenizer()


def _parse(body: object, chat: bool = False, max_model_len: int = 100) -> object:
    return parse_generation(body, chat, TOK, max_model_len, "m")


def test_prompt_forms_count_tokens() -> None:
    assert _parse({"prompt": "t1 t2 t3", "max_tokens": 2}).prompt_tokens == 3  # type: ignore[attr-defined]  # Generation
    assert _parse({"prompt": [5, 6], "max_tokens": 2}).prompt_tokens == 2  # type: ignore[attr-defined]  # Generation
    assert _parse({"prompt": ["t1 t2"], "max_tokens": 2}).prompt_tokens == 2  # type: ignore[attr-defined]  # Generation


def test_max_tokens_defaults_to_the_rest_of_the_context() -> None:
    gen = parse_generation({"prompt": "t1 t2"}, False, TOK, 100, "m")
    assert gen.max_tokens == 98
    assert not gen.stream and not gen.include_usage


def test_chat_template_adds_three_marker_tokens_per_single_turn() -> None:
    text = render_chat([{"role": "user", "content": [{"type": "text", "text": "t1 t2"}]}])
    assert TOK.count(text) == 5


def test_prompt_at_the_context_limit_is_refused() -> None:
    with pytest.raises(
        BadRequestError,
        match=r"maximum context length is 3 tokens\. However, your request has 3 input tokens",
    ):
        parse_generation({"prompt": "t1 t2 t3"}, False, TOK, 3, "m")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"prompt": ["t1", "t2"]}, "batch of exactly one"),
        ({"prompt": "t1", "max_tokens": 0}, "max_tokens must be a positive integer"),
        ({"messages": []}, "non-empty list"),
        ([1, 2], "JSON object"),
    ],
)
def test_malformed_bodies_are_400(body: object, message: str) -> None:
    chat = isinstance(body, dict) and "messages" in body
    with pytest.raises(BadRequestError, match=message) as info:
        parse_generation(body, chat, TOK, 100, "m")
    assert info.value.status == 400


@pytest.mark.parametrize("chat", [False, True])
def test_pre_rendered_frames_equal_the_chunk_objects(chat: bool) -> None:
    gen = Generation(chat=chat, prompt_tokens=3, max_tokens=5, stream=True, include_usage=True)
    frames = SseFrames(gen, "id-1", 7, "m")
    for first in (False, True):
        for last in (False, True):
            chunk = stream_chunk(gen, "id-1", 7, "m", ' t1 "q"\n', first, last)
            assert frames.event(' t1 "q"\n', first, last) == (
                b"data: " + orjson.dumps(chunk) + b"\n\n"
            )
