"""The shipped GSM8K-format task: our own problems, answers that check, the harness's format."""

from __future__ import annotations

import ast
import json
import operator
import re
from collections.abc import Callable

import yaml

from inferx_pipeline.evals.invocation import DATA_DIR
from inferx_pipeline.matrix.eval_catalog import EvalCatalog

# GSM8K's calculator annotations: <<expression=result>>.
ANNOTATION = re.compile(r"<<([0-9+\-*/. ]+)=([0-9.]+)>>")
OPERATORS: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def _value(node: ast.expr) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    assert isinstance(node, ast.BinOp), ast.dump(node)
    return OPERATORS[type(node.op)](_value(node.left), _value(node.right))


def _split(name: str) -> list[dict[str, str]]:
    lines = (DATA_DIR / f"gsm8k-inferx-{name}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_every_worked_answer_computes_and_ends_in_its_number() -> None:
    docs = _split("train") + _split("test")
    assert (len(_split("train")), len(_split("test"))) == (5, 30)
    for doc in docs:
        assert set(doc) == {"question", "answer"}
        steps = ANNOTATION.findall(doc["answer"])
        assert steps, doc["question"]
        for expression, result in steps:
            parsed = ast.parse(expression, mode="eval").body
            assert _value(parsed) == float(result), (doc["question"], expression)
        final = doc["answer"].rsplit("\n#### ", 1)[1]
        assert float(final) == float(steps[-1][1]), doc["question"]
    assert len({doc["question"] for doc in docs}) == len(docs)


def test_the_task_file_names_the_catalogs_task_and_its_splits(evals: EvalCatalog) -> None:
    task = yaml.safe_load((DATA_DIR / "gsm8k_inferx.yaml").read_text())
    shipped = evals.tasks["gsm8k-inferx"]
    assert task["task"] == shipped.lm_eval_task
    assert [f["name"] for f in task["filter_list"]] == list(shipped.filters)
    assert task["num_fewshot"] == 5 and task["output_type"] == "generate_until"
    files = task["dataset_kwargs"]["data_files"]
    assert all((DATA_DIR / path).is_file() for path in files.values())
