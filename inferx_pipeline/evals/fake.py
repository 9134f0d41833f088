"""``FakeHarness``: writes what lm-evaluation-harness would, at a chosen score, instantly.

For tests of everything around the harness (the sweep's eval points, storage, the gate):
it writes the run's config, a ``results_*.json`` and a ``samples_*.jsonl`` in the
harness's layout, then reads them back through ``read_score`` like the real one.
"""

from __future__ import annotations

import json
import math

from inferx_pipeline.evals.invocation import HARNESS_DIR, LmEvalRun
from inferx_pipeline.evals.scores import EvalScore, read_score

STAMP = "2026-01-01T00-00-00.000000"


class FakeHarness:
    """Every filter scores ``exact_match`` over ``documents`` documents."""

    def __init__(self, exact_match: float, *, documents: int = 30, version: str = "0.4.13") -> None:
        self.exact_match = exact_match
        self.documents = documents
        self.version = version
        self.runs: list[LmEvalRun] = []

    def score(self, run: LmEvalRun, *, timeout_s: float) -> EvalScore:
        """The chosen score, through the harness's own files (``timeout_s`` unused)."""
        self.runs.append(run)
        run.write_config()
        task, filters = run.eval.task.lm_eval_task, run.eval.task.filters
        model_dir = run.output_dir / HARNESS_DIR / "served"
        model_dir.mkdir(parents=True, exist_ok=True)
        p, n = self.exact_match, self.documents
        stderr = math.sqrt(p * (1 - p) / (n - 1)) if n > 1 else 0.0
        metrics: dict[str, float | str] = {"alias": task}
        for name in filters:
            metrics[f"exact_match,{name}"] = p
            metrics[f"exact_match_stderr,{name}"] = stderr
        results = {
            "results": {task: metrics},
            "n-samples": {task: {"original": n, "effective": n}},
            "lm_eval_version": self.version,
            "config": run.config,
        }
        (model_dir / f"results_{STAMP}.json").write_text(json.dumps(results), encoding="utf-8")
        correct = round(p * n)
        samples = [
            {
                "doc_id": doc,
                "filter": name,
                "resps": [["fake"]],
                "exact_match": float(doc < correct),
            }
            for doc in range(n)
            for name in filters
        ]
        lines = "".join(json.dumps(sample) + "\n" for sample in samples)
        (model_dir / f"samples_{task}_{STAMP}.jsonl").write_text(lines, encoding="utf-8")
        return read_score(run.output_dir, run.eval)
