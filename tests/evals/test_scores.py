"""Scores read from the harness's output: each filter, its standard error, sample counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferx_pipeline.errors import EvalError
from inferx_pipeline.evals.scores import read_score
from inferx_pipeline.matrix.eval_catalog import EvalCatalog


def _harness_output(out: Path, metrics: dict[str, float]) -> None:
    model = out / "harness" / "inferx__tiny-qwen3"
    model.mkdir(parents=True)
    results = {
        "results": {"gsm8k_inferx": {"alias": "gsm8k_inferx", **metrics}},
        "n-samples": {"gsm8k_inferx": {"original": 30, "effective": 30}},
        "lm_eval_version": "0.4.13",
    }
    (model / "results_2026-12-04T14-46-54.json").write_text(json.dumps(results))
    (model / "samples_gsm8k_inferx_2026-12-04T14-46-54.jsonl").write_text("{}\n")


def test_every_filter_must_reach_the_threshold(tmp_path: Path, evals: EvalCatalog) -> None:
    _harness_output(
        tmp_path,
        {
            "exact_match,strict-match": 0.9,
            "exact_match_stderr,strict-match": 0.0557,
            "exact_match,flexible-extract": 0.9333,
            "exact_match_stderr,flexible-extract": 0.0463,
        },
    )
    resolved = evals.for_family("tiny-qwen3").model_copy(update={"threshold": 0.92})
    score = read_score(tmp_path, resolved)
    assert [(f.filter, f.exact_match, f.stderr) for f in score.filters] == [
        ("strict-match", 0.9, 0.0557),
        ("flexible-extract", 0.9333, 0.0463),
    ]
    assert (score.task, score.dataset, score.n_original, score.n_effective) == (
        "gsm8k-inferx",
        "shipped",
        30,
        30,
    )
    assert score.lm_eval_version == "0.4.13" and score.samples_file.name.startswith("samples_")
    assert not score.passed  # strict-match 0.90 < 0.92
    assert read_score(tmp_path, resolved.model_copy(update={"threshold": 0.9})).passed


def test_a_missing_filter_or_file_is_an_eval_error(tmp_path: Path, evals: EvalCatalog) -> None:
    resolved = evals.for_family("tiny-qwen3")
    with pytest.raises(EvalError, match=r"expected one results_\*\.json from lm-eval, found 0"):
        read_score(tmp_path, resolved)
    _harness_output(tmp_path, {"exact_match,strict-match": 0.5})
    with pytest.raises(
        EvalError, match=r"gsm8k_inferx: no score 'exact_match_stderr,strict-match'"
    ):
        read_score(tmp_path, resolved)
