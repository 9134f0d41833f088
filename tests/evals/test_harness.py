"""lm-eval for real (its own venv) against a served endpoint: a score with its provenance,
judged by the threshold gate; the harness's process gets the allow-listed environment only.

The simulator answers with filler words here: both filters score exactly 0.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.conformance.verification import check_real_verification
from inferx_pipeline.errors import EvalError
from inferx_pipeline.evals.harness import run_harness
from inferx_pipeline.evals.invocation import lm_eval_run
from inferx_pipeline.evals.scores import read_score
from inferx_pipeline.launch.secrets import HOST_BASICS
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.eval_catalog import EvalCatalog
from inferx_pipeline.matrix.evals import eval_job
from inferx_pipeline.matrix.job import BenchmarkJob

from .conftest import TINY, VLLM_SYNTHETIC, recipe_jobs

HARNESS_TIMEOUT_S = 600.0
RAISED_THRESHOLD = 0.9  # the default family's (catalog/evals.yaml)
CANARY = "canary-5e1f0b"


def _probe_python(tmp_path: Path, real: Path) -> tuple[Path, Path]:
    """An interpreter that records its environment, then runs as ``real``; and the record.

    The harness starts it as lm-eval's python, so the record is what the real child got.
    """
    seen, probe = tmp_path / "child-env.json", tmp_path / "probe-python"
    probe.write_text(
        f"#!{real}\nimport json, os, sys\n"
        f"with open({str(seen)!r}, 'w') as out:\n    json.dump(dict(os.environ), out)\n"
        f"os.execv({str(real)!r}, [{str(real)!r}, *sys.argv[1:]])\n"
    )
    probe.chmod(0o755)
    return probe, seen


def test_lm_eval_scores_the_shipped_task_on_a_served_endpoint(
    tmp_path: Path,
    evals: EvalCatalog,
    catalog: Catalog,
    spec_of: Callable[[BenchmarkJob], ServerSpec],
    lm_eval_python: Path,
    served_tiny: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The caller's secrets: the results database's URL and a credential by another name.
    monkeypatch.setenv("INFERX_DATABASE_URL", f"postgresql://inferx:{CANARY}@127.0.0.1/results")
    monkeypatch.setenv("INFERX_TEST_API_KEY", CANARY)
    probe, seen = _probe_python(tmp_path, lm_eval_python)
    job = eval_job(recipe_jobs(TINY, "none")[-1], evals=evals, catalog=catalog)
    spec = spec_of(job)
    check_real_verification(job, spec, evals.synthetic_acceptance)
    run = lm_eval_run(
        job,
        spec,
        base_url=served_tiny,
        evals=evals,
        python=probe,
        output_dir=tmp_path / "eval",
        hf_home=tmp_path / "hf-home",
    )
    score = run_harness(run, timeout_s=HARNESS_TIMEOUT_S)
    # The simulator answers with filler tokens: nothing matches, and the threshold is 0.
    assert [(f.filter, f.exact_match, f.stderr) for f in score.filters] == [
        ("strict-match", 0.0, 0.0),
        ("flexible-extract", 0.0, 0.0),
    ]
    assert (score.n_original, score.n_effective) == (30, 30)
    # The gate: 0 reaches the tiny model's shipped threshold, 0.0 (its eval proves the path,
    # not accuracy); the default family's 0.9 it does not.
    assert (score.threshold, score.passed) == (0.0, True)
    raised = run.eval.model_copy(update={"threshold": RAISED_THRESHOLD})
    assert not read_score(run.output_dir, raised).passed
    child = json.loads(seen.read_text())
    assert set(child) == {name for name in HOST_BASICS if name in os.environ} | set(run.env)
    assert not [name for name, value in child.items() if CANARY in value]
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


def test_a_host_task_is_found_in_its_built_in_folder_alone(
    tmp_path: Path,
    evals: EvalCatalog,
    spec_of: Callable[[BenchmarkJob], ServerSpec],
    lm_eval_python: Path,
) -> None:
    # The harness indexes only lm_eval/tasks/gsm8k (catalog/evals.yaml lm-eval-folder):
    # the task resolves there and goes on to its dataset, which an empty offline cache
    # lacks (no Hub here), rather than failing as a task not found.
    job = recipe_jobs(VLLM_SYNTHETIC, "evals-only")[-1]
    run = lm_eval_run(
        job,
        spec_of(job),
        base_url="http://127.0.0.1:9/",
        evals=evals,
        python=lm_eval_python,
        output_dir=tmp_path / "eval",
        hf_home=tmp_path / "hf-home",
    )
    assert run.argv[-2:] == ("--builtin", "gsm8k")
    with pytest.raises(EvalError, match=r"Couldn't reach 'openai/gsm8k' on the Hub") as failed:
        run_harness(run, timeout_s=HARNESS_TIMEOUT_S)
    assert "Tasks not found" not in str(failed.value)
