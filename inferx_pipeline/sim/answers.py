"""Answer keys: the simulator answering an eval's questions right, for a chosen share of them.

A key is a JSONL file of ``{"question", "answer"}`` objects, GSM8K's format (e.g. the
project's own task, ``inferx_pipeline/evals/data/gsm8k-inferx-test.jsonl``). A prompt
holding one of its questions is answered with the last line of that question's answer
(GSM8K's ``#### 42``, what the task's filters extract) when the question is among the
share answered right, else with the simulator's filler words. The question that
appears last in the prompt is the one asked: few-shot examples come before it.

Which questions are answered right is fixed by their order in the file: question ``i``
(from 0) is right when ``floor((i + 1) x share) > floor(i x share)``, so ``floor(n x
share)`` of ``n`` are, spread evenly (share 0.5: every second question, from the second).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from pydantic import Field, ValidationError

from inferx_pipeline.errors import SimError
from inferx_pipeline.strict import FrozenModel


class KeyEntry(FrozenModel):
    """One line of an answer key."""

    question: str = Field(pattern=r"\S", description="The question, as the prompt quotes it.")
    answer: str = Field(pattern=r"\S", description="The gold answer; its last line is answered.")


class AnswerKey:
    """Questions and what the simulator answers to each (None: filler words)."""

    def __init__(self, answers: Mapping[str, str | None]) -> None:
        self.answers = dict(answers)

    def answer(self, prompt: str) -> str | None:
        """The answer to the question ``prompt`` asks (the key's question ending last in it,
        the longer one on a tie); None when it asks none, or one answered with filler."""
        asked: tuple[int, int, str] | None = None
        for question in self.answers:
            start = prompt.rfind(question)
            if start < 0:
                continue
            found = (start + len(question), len(question), question)
            asked = found if asked is None else max(asked, found)
        return None if asked is None else self.answers[asked[2]]

    @property
    def right(self) -> int:
        """How many of the key's questions are answered right."""
        return sum(answer is not None for answer in self.answers.values())


def answered_right(index: int, share: float) -> bool:
    """Whether question ``index`` (from 0, file order) is among the ``share`` answered right."""
    return math.floor((index + 1) * share) > math.floor(index * share)


def load_answer_key(path: Path, share: float) -> AnswerKey:
    """The answer key in JSONL file ``path``, ``share`` (0 to 1) of it answered right.

    SimError naming the file and line when it cannot be read, a line is not a
    ``{"question", "answer"}`` object, or a question repeats.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise SimError(f"{path}: cannot read the answer key ({err})") from err
    answers: dict[str, str | None] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = KeyEntry.model_validate_json(line)
        except ValidationError as err:
            problem = err.errors()[0]
            where = ".".join(str(part) for part in problem["loc"]) or "line"
            raise SimError(
                f"{path}:{number}: {where}: {problem['msg']}; expected a JSON object "
                'with string "question" and "answer" (GSM8K\'s format)'
            ) from err
        if entry.question in answers:
            raise SimError(f"{path}:{number}: question repeats an earlier line; keep one")
        last_line = entry.answer.strip().splitlines()[-1].strip()
        answers[entry.question] = last_line if answered_right(len(answers), share) else None
    if not answers:
        raise SimError(f"{path}: the answer key holds no questions")
    return AnswerKey(answers)
