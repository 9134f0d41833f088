"""TensorRT-LLM (``trtllm-serve``): argv, the ``extra_llm_api_options`` YAML, synthetic acceptance.

``trtllm-serve`` reads its LLM-API options (speculative config, KV-cache config, CUDA
graphs, attention DP) only from a YAML *file*. A ServerSpec carries no files, so the
argv starts with a fixed ``python3 -c`` program that writes the YAML (passed verbatim
as one argv element, never through a shell) to a temp file, puts that file's path
where ``{extra_llm_api_options}`` stands, and execs ``trtllm-serve``. The YAML text is
therefore visible in the spec and in the golden argv files.

Synthetic acceptance: TensorRT-LLM forces the number of accepted draft tokens per step
through ``TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS`` = AL - 1 (AL counts the bonus
token, the engine's number does not). Eval jobs verify for real and get no such env.
"""

from __future__ import annotations

import yaml

from inferx_pipeline.engines.adapter import PORT, EngineAdapter, capture_sizes, render_args
from inferx_pipeline.matrix.job import BenchmarkJob, JobParallel

OPTIONS_PLACEHOLDER = "{extra_llm_api_options}"
FORCE_ACCEPTED_ENV = "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"
# Writes argv[1] to a temp YAML file, substitutes its path into the rest, execs the rest.
WRITE_OPTIONS_THEN_EXEC = (
    "import os, sys, tempfile\n"
    "fd, path = tempfile.mkstemp(prefix='llm-api-options-', suffix='.yaml')\n"
    "os.write(fd, sys.argv[1].encode()); os.close(fd)\n"
    f"argv = [a.replace('{OPTIONS_PLACEHOLDER}', path) for a in sys.argv[2:]]\n"
    "os.execvp(argv[0], argv)\n"
)
# Our method names -> TensorRT-LLM speculative_config decoding_type.
DECODING_TYPES: dict[str, str] = {
    "mtp": "MTP",
    "eagle": "Eagle",
    "eagle3": "Eagle",
    "draft_model": "DraftTarget",
    "ngram": "NGram",
}
KV_DTYPES: dict[str, str] = {"fp8": "fp8", "bf16": "auto", "fp16": "auto", "fp4": "nvfp4"}


class TrtAdapter(EngineAdapter):
    """TensorRT-LLM's OpenAI-compatible server (PyTorch backend)."""

    kind = "trt"

    def argv(self, job: BenchmarkJob, parallel: JobParallel) -> list[str]:
        serve = ["trtllm-serve", "serve", job.model.hf_id, "--host", "0.0.0.0", "--port", PORT]
        serve += ["--backend", "pytorch", *_parallel(parallel)]
        if job.max_num_seqs is not None:
            serve += ["--max_batch_size", str(job.max_num_seqs)]
        if job.max_model_len is not None:
            serve += ["--max_seq_len", str(job.max_model_len)]
        serve += ["--extra_llm_api_options", OPTIONS_PLACEHOLDER, *render_args(job.engine.args)]
        return ["python3", "-c", WRITE_OPTIONS_THEN_EXEC, llm_api_options_yaml(job), *serve]

    def env(self, job: BenchmarkJob) -> dict[str, str]:
        env = dict(job.engine.env)
        spec = job.spec
        if spec.acceptance == "synthetic" and not job.run_eval and spec.target_al is not None:
            env[FORCE_ACCEPTED_ENV] = f"{round(spec.target_al - 1, 6):g}"
        return env


def _parallel(p: JobParallel) -> list[str]:
    argv = ["--tp_size", str(p.tp)]
    if p.ep > 1:
        argv += ["--ep_size", str(p.ep)]
    if p.pp > 1:
        argv += ["--pp_size", str(p.pp)]
    return argv


def llm_api_options(job: BenchmarkJob) -> dict[str, object]:
    """The ``extra_llm_api_options`` mapping of ``job`` (pure)."""
    options: dict[str, object] = {}
    if job.parallel is not None and job.parallel.dp_attn:
        options["enable_attention_dp"] = True
    kv: dict[str, object] = {}
    if job.model.kv_cache_dtype != "auto":
        kv["dtype"] = KV_DTYPES[job.model.kv_cache_dtype]
    if job.engine.gpu_memory_utilization is not None:
        kv["free_gpu_memory_fraction"] = job.engine.gpu_memory_utilization
    if kv:
        options["kv_cache_config"] = kv
    sizes = capture_sizes(job)
    if sizes is not None:
        options["cuda_graph_config"] = {"enable_padding": True, "batch_sizes": list(sizes)}
    speculative = _speculative_config(job)
    if speculative is not None:
        options["speculative_config"] = speculative
    return options


def llm_api_options_yaml(job: BenchmarkJob) -> str:
    """``llm_api_options(job)`` as YAML text, keys sorted (stable for golden files)."""
    return yaml.safe_dump(llm_api_options(job), sort_keys=True)


def _speculative_config(job: BenchmarkJob) -> dict[str, object] | None:
    spec = job.spec
    if spec.method == "none":
        return None
    config: dict[str, object] = {"decoding_type": DECODING_TYPES.get(spec.method, spec.method)}
    if spec.draft_tokens is not None:
        key = "num_nextn_predict_layers" if spec.method == "mtp" else "max_draft_len"
        config[key] = spec.draft_tokens
    if spec.draft_model is not None:
        config["speculative_model_dir"] = spec.draft_model
    if spec.method == "eagle3":
        config["eagle3_one_model"] = True
    config.update(spec.options)
    return config
