"""The lm-eval run of an eval job: the job's endpoint, API, thinking kwargs, concurrency."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.evals.invocation import DATA_DIR, MAIN, lm_eval_run
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.eval_catalog import EvalCatalog
from inferx_pipeline.matrix.evals import eval_job
from inferx_pipeline.matrix.job import BenchmarkJob

from .conftest import TINY, VLLM_SYNTHETIC, recipe_jobs

PYTHON = Path("/venv/lm-eval/bin/python")
HF_HOME = Path("/data/hf-home")


def test_a_chat_endpoint_gets_the_chat_template_and_the_served_thinking_mode(
    tmp_path: Path, evals: EvalCatalog, spec_of: Callable[[BenchmarkJob], ServerSpec]
) -> None:
    job = recipe_jobs(VLLM_SYNTHETIC, "evals-only")[-1]
    run = lm_eval_run(
        job,
        spec_of(job),
        base_url="http://127.0.0.1:8000/",
        evals=evals,
        python=PYTHON,
        output_dir=tmp_path,
        hf_home=HF_HOME,
    )
    assert run.config == {
        "model": "local-chat-completions",
        "model_args": {
            "model": "MiniMaxAI/MiniMax-M3-MXFP8",
            "base_url": "http://127.0.0.1:8000/v1/chat/completions",
            "num_concurrent": job.conc,
            "max_retries": 5,
            "timeout": 1800,
            "tokenized_requests": False,
            "max_length": 16384,
            "tokenizer_backend": None,
        },
        "tasks": ["gsm8k"],
        "apply_chat_template": True,
        "gen_kwargs": {
            "max_gen_toks": 12288,
            "temperature": 0.0,
            "top_p": 1.0,
            "chat_template_kwargs": {"thinking_mode": "enabled"},
        },
        "output_path": str(tmp_path / "harness"),
        "log_samples": True,
    }
    assert job.conc == 16  # evals-only: the agentic group's highest concurrency
    config = run.write_config()
    # The host task's folder is the only built-in one the harness indexes.
    assert run.argv == (str(PYTHON), str(MAIN), str(config), "--builtin", "gsm8k")
    assert yaml.safe_load(config.read_text()) == run.config
    assert run.env == {
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_HOME": str(HF_HOME),
    }
    assert run.cwd == tmp_path and run.eval.threshold == evals.for_family("minimaxm3").threshold


def test_the_tiny_model_runs_the_shipped_task_on_its_completions_endpoint(
    tmp_path: Path,
    evals: EvalCatalog,
    catalog: Catalog,
    spec_of: Callable[[BenchmarkJob], ServerSpec],
) -> None:
    job = eval_job(recipe_jobs(TINY, "none")[-1], evals=evals, catalog=catalog)
    run = lm_eval_run(
        job,
        spec_of(job),
        base_url="http://127.0.0.1:9000",
        evals=evals,
        python=PYTHON,
        output_dir=tmp_path,
        hf_home=HF_HOME,
    )
    assert run.config["model"] == "local-completions"
    assert run.config["model_args"]["base_url"] == "http://127.0.0.1:9000/v1/completions"
    assert run.config["apply_chat_template"] is False
    assert "chat_template_kwargs" not in run.config["gen_kwargs"]
    assert (run.config["gen_kwargs"]["max_gen_toks"], run.config["num_fewshot"]) == (32, 0)
    assert (run.config["tasks"], run.config["include_path"]) == (["gsm8k_inferx"], str(DATA_DIR))
    assert run.cwd == DATA_DIR and run.env["HF_HOME"] == str(tmp_path / "hf-home")
    assert run.argv == (str(PYTHON), str(MAIN), str(tmp_path / "lm-eval-config.yaml"))
