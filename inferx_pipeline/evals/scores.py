"""Scores from a harness run: exact match per filter, its standard error, sample counts.

``read_score`` reads the ``results_*.json`` and ``samples_*.jsonl`` the harness writes
under ``<output_dir>/harness/<model>/`` and keeps what a stored score needs: each
filter's exact match and standard error, the original and effective sample counts, the
harness version and the sample-level output file (the artifact).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from inferx_pipeline.errors import EvalError
from inferx_pipeline.evals.invocation import HARNESS_DIR
from inferx_pipeline.matrix.eval_catalog import ResolvedEval
from inferx_pipeline.strict import FrozenModel


class FilterScore(FrozenModel):
    """Exact match under one filter (strict-match, flexible-extract)."""

    filter: str
    exact_match: float = Field(ge=0, le=1, description="Share of answers that match.")
    stderr: float = Field(ge=0, description="Standard error of the mean.")


class EvalScore(FrozenModel):
    """One eval's outcome, judged against its threshold."""

    task: str = Field(description="Our task name (catalog/evals.yaml).")
    lm_eval_task: str
    dataset: Literal["host", "shipped"] = Field(description="Which data was scored.")
    filters: tuple[FilterScore, ...]
    n_original: int = Field(ge=0, description="Documents in the task's test split.")
    n_effective: int = Field(ge=0, description="Documents scored.")
    threshold: float
    lm_eval_version: str
    results_file: Path
    samples_file: Path = Field(description="Sample-level output (prompts, answers, scores).")

    @property
    def passed(self) -> bool:
        """True when every filter's exact match reaches the threshold."""
        return all(score.exact_match >= self.threshold for score in self.filters)


def _only(output_dir: Path, pattern: str) -> Path:
    found = sorted((output_dir / HARNESS_DIR).glob(f"*/{pattern}"))
    if len(found) != 1:
        raise EvalError(
            f"{output_dir / HARNESS_DIR}: expected one {pattern} from lm-eval, found {len(found)}"
        )
    return found[0]


def read_score(output_dir: Path, resolved: ResolvedEval) -> EvalScore:
    """The score of the harness run that wrote into ``output_dir``.

    EvalError when the results or samples file is missing or lacks a filter of the task.
    """
    results_file = _only(output_dir, "results_*.json")
    samples_file = _only(output_dir, f"samples_{resolved.task.lm_eval_task}_*.jsonl")
    doc: dict[str, Any] = json.loads(results_file.read_text(encoding="utf-8"))
    name = resolved.task.lm_eval_task
    metrics = doc["results"].get(name, {})
    try:
        filters = tuple(
            FilterScore(
                filter=f,
                exact_match=metrics[f"exact_match,{f}"],
                stderr=metrics[f"exact_match_stderr,{f}"],
            )
            for f in resolved.task.filters
        )
    except KeyError as err:
        raise EvalError(f"{results_file}: {name}: no score {err} in lm-eval's results") from err
    counts = doc["n-samples"][name]
    return EvalScore(
        task=resolved.task_name,
        lm_eval_task=name,
        dataset=resolved.task.dataset,
        filters=filters,
        n_original=counts["original"],
        n_effective=counts["effective"],
        threshold=resolved.threshold,
        lm_eval_version=doc["lm_eval_version"],
        results_file=results_file,
        samples_file=samples_file,
    )
