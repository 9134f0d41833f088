"""The lm-evaluation-harness invocation of one eval job against its served endpoint.

``lm_eval_run`` builds the ``lm-eval run --config`` document and the command around it
(``lm_eval_main.py``, which runs that document indexing only the task's own folder); it
starts nothing. The harness talks to the job's own server: ``local-chat-completions``
with the chat template applied for chat endpoints (as InferenceX runs GSM8K), else
``local-completions``; the server's chat-template kwargs (the served thinking mode, as
the golden curves were measured) ride on every request; requests go out at the job's
concurrency; the answer budget and sampling follow ``catalog/evals.yaml``. The harness
runs offline: datasets come from the host's cache, or from ``evals/data`` for the
project's own task.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import Field

from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.eval_catalog import EvalCatalog, ResolvedEval
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.strict import FrozenModel

# The shipped task's lm-eval YAML and its JSONL splits.
DATA_DIR = Path(__file__).resolve().parent / "data"
CONFIG_FILE = "lm-eval-config.yaml"
# Runs the config under the lm-eval venv's python (a standalone script, by path).
MAIN = Path(__file__).resolve().with_name("lm_eval_main.py")
HARNESS_DIR = "harness"
# The harness's API model and the endpoint path, by the server's client API.
MODELS: dict[str, tuple[str, str]] = {
    "chat": ("local-chat-completions", "/v1/chat/completions"),
    "completions": ("local-completions", "/v1/completions"),
}


class LmEvalRun(FrozenModel):
    """One harness run: its config document, command, environment and directories."""

    eval: ResolvedEval = Field(description="Task, threshold and answer budget.")
    config: dict[str, Any] = Field(description="The `lm-eval run --config` document.")
    argv: tuple[str, ...] = Field(description="The command; reads the config from output_dir.")
    env: dict[str, str] = Field(description="Variables set on top of the host basics.")
    cwd: Path = Field(description="Working directory (the shipped task's data_files are relative).")
    output_dir: Path = Field(description="Config, harness results and samples go here.")

    def write_config(self) -> Path:
        """Write the config document into ``output_dir`` (created); its path."""
        self.output_dir.mkdir(parents=True, exist_ok=True)
        path = self.output_dir / CONFIG_FILE
        path.write_text(yaml.safe_dump(self.config, sort_keys=False), encoding="utf-8")
        return path


def lm_eval_run(
    job: BenchmarkJob,
    spec: ServerSpec,
    *,
    base_url: str,
    evals: EvalCatalog,
    python: Path,
    output_dir: Path,
    hf_home: Path,
) -> LmEvalRun:
    """The harness run that scores eval ``job`` served by ``spec`` at ``base_url``.

    ``python`` is the lm-eval venv's interpreter (``scripts/lm-eval-env``); ``hf_home``
    the host's Hugging Face home, whose hub and datasets caches hold the host datasets
    (read offline). The shipped task keeps its own cache under ``output_dir``.
    """
    resolved = evals.for_family(job.model.family)
    model, path = MODELS[spec.client.api]
    protocol = evals.protocol
    model_args: dict[str, Any] = {
        "model": spec.client.model_name,
        "base_url": base_url.rstrip("/") + path,
        "num_concurrent": job.conc,
        "max_retries": protocol.max_retries,
        "timeout": protocol.timeout_s,
        "tokenized_requests": False,
        "max_length": resolved.max_length,
        "tokenizer_backend": None,
    }
    gen_kwargs: dict[str, Any] = {
        "max_gen_toks": resolved.max_tokens,
        "temperature": protocol.temperature,
        "top_p": protocol.top_p,
    }
    chat = spec.client.api == "chat"
    if chat and spec.client.chat_template_kwargs:
        gen_kwargs["chat_template_kwargs"] = dict(spec.client.chat_template_kwargs)
    shipped = resolved.task.dataset == "shipped"
    config: dict[str, Any] = {
        "model": model,
        "model_args": model_args,
        "tasks": [resolved.task.lm_eval_task],
        "apply_chat_template": chat,
        "gen_kwargs": gen_kwargs,
        "output_path": str(output_dir / HARNESS_DIR),
        "log_samples": True,
    }
    if resolved.num_fewshot is not None:
        config["num_fewshot"] = resolved.num_fewshot
    if shipped:
        config["include_path"] = str(DATA_DIR)
    env = {
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_HOME": str(output_dir / "hf-home" if shipped else hf_home),
    }
    folder = resolved.task.lm_eval_folder
    builtin = ("--builtin", folder) if folder is not None else ()
    argv = (str(python), str(MAIN), str(output_dir / CONFIG_FILE), *builtin)
    return LmEvalRun(
        eval=resolved,
        config=config,
        argv=argv,
        env=env,
        cwd=DATA_DIR if shipped else output_dir,
        output_dir=output_dir,
    )
