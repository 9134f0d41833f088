"""lm-eval for real (its own venv) against a served endpoint: a score with its provenance."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.conformance.verification import check_real_verification
from inferx_pipeline.evals.catalog import EvalCatalog
from inferx_pipeline.evals.harness import run_harness
from inferx_pipeline.evals.invocation import lm_eval_run
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.evals import eval_job
from inferx_pipeline.matrix.job import BenchmarkJob

from .conftest import TINY, recipe_jobs

HARNESS_TIMEOUT_S = 600.0


def test_lm_eval_scores_the_shipped_task_on_a_served_endpoint(
    tmp_path: Path,
    evals: EvalCatalog,
    catalog: Catalog,
    spec_of: Callable[[BenchmarkJob], ServerSpec],
    lm_eval_python: Path,
    served_tiny: str,
) -> None:
    job = eval_job(recipe_jobs(TINY, "none")[-1], evals=evals, catalog=catalog)
    spec = spec_of(job)
    check_real_verification(job, spec, evals.synthetic_acceptance)
    run = lm_eval_run(
        job,
        spec,
        base_url=served_tiny,
        evals=evals,
        python=lm_eval_python,
        output_dir=tmp_path / "eval",
        hf_home=tmp_path / "hf-home",
    )
    score = run_harness(run, timeout_s=HARNESS_TIMEOUT_S)
    # The simulator answers with filler tokens: nothing matches, and the threshold is 0.
    assert [(f.filter, f.exact_match, f.stderr) for f in score.filters] == [
        ("strict-match", 0.0, 0.0),
        ("flexible-extract", 0.0, 0.0),
    ]
    assert score.passed and (score.n_original, score.n_effective) == (30, 30)
    assert (score.task, score.dataset, score.lm_eval_version) == (
        "gsm8k-inferx",
        "shipped",
        "0.4.13",
    )
    samples = [json.loads(line) for line in score.samples_file.read_text().splitlines()]
    assert {(s["doc_id"], s["filter"]) for s in samples} == {
        (doc, f.filter) for doc in range(30) for f in score.filters
    }  # the sample-level artifact: each document under each filter
    harness = json.loads(score.results_file.read_text())["config"]
    assert harness["model"] == "local-completions"
    assert harness["model_args"]["num_concurrent"] == job.conc == 4
    assert harness["gen_kwargs"]["max_gen_toks"] == 32
    assert json.loads(score.results_file.read_text())["n-shot"] == {"gsm8k_inferx": 0}
