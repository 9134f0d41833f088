"""vLLM (``vllm serve``): argv, env and synthetic acceptance via ``--speculative-config``."""

from __future__ import annotations

import json

from inferx_pipeline.engines.adapter import MODEL, PORT, EngineAdapter, capture_sizes, render_args
from inferx_pipeline.errors import LaunchError
from inferx_pipeline.matrix.job import BenchmarkJob, JobParallel

# Our method names -> vLLM speculative-config ``method``.
SPEC_METHODS: dict[str, str] = {
    "mtp": "mtp",
    "eagle": "eagle",
    "eagle3": "eagle3",
    "dspark": "dspark",
    "draft_model": "draft_model",
    "ngram": "ngram",
}
# vLLM spells the KV dtype per format; auto lets it follow the model.
KV_DTYPES: dict[str, str] = {"fp8": "fp8", "bf16": "bfloat16", "fp16": "float16", "fp4": "fp4"}


class VllmAdapter(EngineAdapter):
    """vLLM's OpenAI-compatible server."""

    kind = "vllm"

    def argv(self, job: BenchmarkJob, parallel: JobParallel) -> list[str]:
        argv = ["vllm", "serve", MODEL, "--served-model-name", job.model.hf_id]
        argv += ["--host", "0.0.0.0", "--port", PORT]
        argv += _parallel(parallel)
        if job.max_model_len is not None:
            argv += ["--max-model-len", str(job.max_model_len)]
        if job.max_num_seqs is not None:
            argv += ["--max-num-seqs", str(job.max_num_seqs)]
        if job.model.kv_cache_dtype != "auto":
            argv += ["--kv-cache-dtype", KV_DTYPES[job.model.kv_cache_dtype]]
        if job.engine.gpu_memory_utilization is not None:
            argv += ["--gpu-memory-utilization", str(job.engine.gpu_memory_utilization)]
        sizes = capture_sizes(job)
        if sizes is not None:
            argv += ["--compilation-config", json.dumps({"cudagraph_capture_sizes": list(sizes)})]
        spec = speculative_config(job)
        if spec is not None:
            argv += ["--speculative-config", json.dumps(spec, sort_keys=True)]
        return argv + _offload(job) + render_args(job.engine.args)

    def env(self, job: BenchmarkJob) -> dict[str, str]:
        return dict(job.engine.env)


def _parallel(p: JobParallel) -> list[str]:
    # DP attention in vLLM: one attention replica per rank (data-parallel), experts shared.
    if p.dp_attn:
        argv = ["--tensor-parallel-size", "1", "--data-parallel-size", str(p.tp)]
    else:
        argv = ["--tensor-parallel-size", str(p.tp)]
    if p.ep > 1 or p.dp_attn:
        argv.append("--enable-expert-parallel")
    if p.pp > 1:
        argv += ["--pipeline-parallel-size", str(p.pp)]
    if p.dcp_size > 1:
        argv += ["--decode-context-parallel-size", str(p.dcp_size)]
    return argv


# KV-offload backend names (InferenceX) -> vLLM --kv-offloading-backend.
OFFLOAD_BACKENDS: dict[str, str] = {
    "vllm-simple": "native",
    "native": "native",
    "lmcache": "lmcache",
}


def _offload(job: BenchmarkJob) -> list[str]:
    # A kv-offloading: dram arm: CPU offload sized to the job's DRAM budget (GB).
    if job.kv_offloading != "dram":
        return []
    backend = job.kv_offload_backend.name if job.kv_offload_backend is not None else "native"
    if backend not in OFFLOAD_BACKENDS:
        raise LaunchError(
            f"{job.job_id}: kv-offload-backend {backend!r} has no vLLM spelling; "
            f"supported: {', '.join(sorted(OFFLOAD_BACKENDS))}"
        )
    argv = ["--kv-offloading-backend", OFFLOAD_BACKENDS[backend]]
    if job.total_cpu_dram_gb:
        argv += ["--kv-offloading-size", str(job.total_cpu_dram_gb)]
    return argv


def speculative_config(job: BenchmarkJob) -> dict[str, object] | None:
    """vLLM ``--speculative-config``; synthetic acceptance only for benchmark (non-eval) jobs."""
    spec = job.spec
    if spec.method == "none":
        return None
    config: dict[str, object] = {"method": SPEC_METHODS[spec.method]}
    if spec.draft_tokens is not None:
        config["num_speculative_tokens"] = spec.draft_tokens
    if spec.draft_model is not None:
        config["model"] = spec.draft_model
    config.update(spec.options)
    if spec.acceptance == "synthetic" and not job.run_eval and spec.target_al is not None:
        config["rejection_sample_method"] = "synthetic"
        config["synthetic_acceptance_length"] = spec.target_al
    return config
