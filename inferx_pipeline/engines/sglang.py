"""SGLang (``sglang.launch_server``): argv, env and synthetic acceptance via SIMULATE_ACC env."""

from __future__ import annotations

from inferx_pipeline.engines.adapter import PORT, EngineAdapter, capture_sizes, render_args
from inferx_pipeline.matrix.job import BenchmarkJob, JobParallel

# Our method names -> SGLang --speculative-algorithm (native MTP heads run as EAGLE).
SPEC_ALGORITHMS: dict[str, str] = {
    "mtp": "EAGLE",
    "eagle": "EAGLE",
    "eagle3": "EAGLE3",
    "draft_model": "STANDALONE",
    "dspark": "DSPARK",
    "ngram": "NGRAM",
}
KV_DTYPES: dict[str, str] = {"fp8": "fp8_e4m3", "bf16": "bf16", "fp16": "auto", "fp4": "fp4_e2m1"}


class SglangAdapter(EngineAdapter):
    """SGLang's OpenAI-compatible server."""

    kind = "sglang"

    def argv(self, job: BenchmarkJob, parallel: JobParallel) -> list[str]:
        argv = ["python3", "-m", "sglang.launch_server", "--model-path", job.model.hf_id]
        argv += ["--host", "0.0.0.0", "--port", PORT, *_parallel(parallel)]
        if job.max_model_len is not None:
            argv += ["--context-length", str(job.max_model_len)]
        if job.max_num_seqs is not None:
            argv += ["--max-running-requests", str(job.max_num_seqs)]
        if job.model.kv_cache_dtype != "auto":
            argv += ["--kv-cache-dtype", KV_DTYPES[job.model.kv_cache_dtype]]
        if job.engine.gpu_memory_utilization is not None:
            argv += ["--mem-fraction-static", str(job.engine.gpu_memory_utilization)]
        sizes = capture_sizes(job)
        if sizes is not None:
            argv += ["--cuda-graph-bs", *(str(s) for s in sizes)]
        return argv + _speculative(job) + _offload(job, parallel) + render_args(job.engine.args)

    def env(self, job: BenchmarkJob) -> dict[str, str]:
        env = dict(job.engine.env)
        spec = job.spec
        if spec.acceptance == "synthetic" and not job.run_eval and spec.target_al is not None:
            env["SGLANG_SIMULATE_ACC_LEN"] = str(spec.target_al)
            env["SGLANG_SIMULATE_ACC_METHOD"] = "match-expected"
            env["SGLANG_SIMULATE_ACC_TOKEN_MODE"] = "real-draft-token"
        return env


def _parallel(p: JobParallel) -> list[str]:
    argv = ["--tp-size", str(p.tp)]
    if p.ep > 1:
        argv += ["--ep-size", str(p.ep)]
    if p.dp_attn:
        argv += ["--enable-dp-attention", "--dp-size", str(p.tp)]
    if p.pp > 1:
        argv += ["--pp-size", str(p.pp)]
    return argv


def _offload(job: BenchmarkJob, p: JobParallel) -> list[str]:
    # A kv-offloading: dram arm runs HiCache; its host pool is the job's DRAM budget per rank.
    if job.kv_offloading != "dram":
        return []
    argv = ["--enable-hierarchical-cache"]
    if job.total_cpu_dram_gb:
        argv += ["--hicache-size", str(job.total_cpu_dram_gb // (p.tp * p.pp))]
    return argv


def _speculative(job: BenchmarkJob) -> list[str]:
    spec = job.spec
    if spec.method == "none":
        return []
    argv = ["--speculative-algorithm", SPEC_ALGORITHMS[spec.method]]
    if spec.draft_tokens is not None:
        argv += ["--speculative-num-steps", str(spec.draft_tokens)]
    if spec.topk is not None:
        argv += ["--speculative-eagle-topk", str(spec.topk)]
    if spec.verify_tokens is not None:
        argv += ["--speculative-num-draft-tokens", str(spec.verify_tokens)]
    if spec.draft_model is not None:
        argv += ["--speculative-draft-model-path", spec.draft_model]
    return argv
