"""The simulator's answer key: which question a prompt asks, which share is answered right,
the key's errors, and the answers on the wire (completions, chat, streamed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from click.testing import CliRunner

from inferx_pipeline.cli import cli
from inferx_pipeline.errors import SimError
from inferx_pipeline.evals.invocation import DATA_DIR
from inferx_pipeline.sim.answers import load_answer_key
from inferx_pipeline.sim.server import serve_in_background
from tests.sim.conftest import MakeConfig
from tests.sim.loopback import run

SHIPPED_KEY = DATA_DIR / "gsm8k-inferx-test.jsonl"
SHIPPED_FEWSHOT = DATA_DIR / "gsm8k-inferx-train.jsonl"


def _rows(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _prompt(question: str, shots: int = 5) -> str:
    """The shipped task's prompt: ``shots`` worked examples, then the question asked."""
    examples = [f"Question: {r['question']}\nAnswer: {r['answer']}" for r in _rows(SHIPPED_FEWSHOT)]
    return "\n\n".join([*examples[:shots], f"Question: {question}\nAnswer:"])


def test_the_question_asked_last_gets_the_last_line_of_its_answer() -> None:
    key = load_answer_key(SHIPPED_KEY, share=1.0)
    rows = _rows(SHIPPED_KEY)
    for row in rows:
        assert key.answer(_prompt(row["question"])) == row["answer"].splitlines()[-1]
    assert rows[0]["answer"].endswith("\n#### 53") and key.answer(rows[0]["question"]) == "#### 53"
    # A prompt quoting an earlier question asks the later one; one asking none gets filler.
    quoted = f"Question: {rows[3]['question']}\n\nQuestion: {rows[7]['question']}\nAnswer:"
    assert key.answer(quoted) == rows[7]["answer"].splitlines()[-1]
    assert key.answer(_prompt("What is two plus two?")) is None


@pytest.mark.parametrize(("share", "right"), [(1.0, range(30)), (0.5, range(1, 30, 2)), (0, [])])
def test_the_share_answered_right_is_spread_evenly_in_file_order(
    share: float, right: range | list[int]
) -> None:
    key = load_answer_key(SHIPPED_KEY, share)
    answered = [i for i, row in enumerate(_rows(SHIPPED_KEY)) if key.answer(row["question"])]
    assert answered == list(right) and key.right == len(answered)


def test_a_damaged_key_names_its_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "key.jsonl"
    path.write_text('{"question": "a?", "answer": "#### 1"}\n{"question": "b?"}\n')
    with pytest.raises(SimError, match=rf"^{path}:2: answer: Field required; expected a JSON"):
        load_answer_key(path, 1.0)
    path.write_text('{"question": "a?", "answer": "#### 1"}\n{"question": "a?", "answer": "2"}\n')
    with pytest.raises(SimError, match=rf"^{path}:2: question repeats an earlier line; keep one"):
        load_answer_key(path, 1.0)
    with pytest.raises(SimError, match=rf"^{tmp_path / 'none.jsonl'}: cannot read the answer key"):
        load_answer_key(tmp_path / "none.jsonl", 1.0)


async def _post(session: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> Any:
    async with session.post(url, json=body) as resp:
        assert resp.status == 200
        return await resp.json()


async def _events(session: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> list[Any]:
    async with session.post(url, json=body | {"stream": True}) as resp:
        text = (await resp.read()).decode()
    events = [line.removeprefix("data: ") for line in text.split("\n\n") if line]
    assert events[-1] == "[DONE]"
    return [json.loads(event) for event in events[:-1]]


def test_the_server_answers_from_its_key_and_stops(make_config: MakeConfig) -> None:
    config = make_config(time_scale=0.01, answer_key=SHIPPED_KEY, answer_share=0.5)
    [first, second] = _rows(SHIPPED_KEY)[:2]  # question 1 is among the half, question 0 not

    async def scenario() -> tuple[Any, Any, list[Any], Any]:
        async with serve_in_background(config) as url, aiohttp.ClientSession() as session:
            completions, chat = url + "/v1/completions", url + "/v1/chat/completions"
            right = await _post(session, completions, {"prompt": [_prompt(second["question"])],
                                                       "max_tokens": 32})  # fmt: skip
            filler = await _post(session, completions, {"prompt": _prompt(first["question"]),
                                                        "max_tokens": 32})  # fmt: skip
            messages = [{"role": "user", "content": _prompt(second["question"])}]
            streamed = await _events(session, chat, {"messages": messages, "max_tokens": 32})
            cut = await _post(session, completions, {"prompt": second["question"], "max_tokens": 1})
            return right, filler, streamed, cut

    right, filler, streamed, cut = run(scenario())
    assert right["choices"][0]["text"] == " #### 441"
    assert (right["choices"][0]["finish_reason"], right["usage"]["completion_tokens"]) == (
        "stop",
        2,
    )
    assert "####" not in filler["choices"][0]["text"]
    assert (filler["choices"][0]["finish_reason"], filler["usage"]["completion_tokens"]) == (
        "length", 32,
    )  # fmt: skip
    assert "".join(e["choices"][0]["delta"]["content"] for e in streamed) == " #### 441"
    assert [e["choices"][0]["finish_reason"] for e in streamed][-1] == "stop"
    assert (cut["choices"][0]["text"], cut["choices"][0]["finish_reason"]) == (" ####", "length")


def test_serve_refuses_a_share_without_a_key() -> None:
    argv = ["sim", "serve", "--sku", "h100", "--model-family", "qwen3.8-27b"]
    result = CliRunner().invoke(cli, [*argv, "--answer-share", "0.5"])
    assert result.exit_code == 2
    assert "answer_share given without answer_key; set --answer-key FILE" in result.output
