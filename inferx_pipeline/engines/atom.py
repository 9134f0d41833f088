"""ATOM (AMD's ROCm inference engine): argv, env, synthetic acceptance as a server flag.

Synthetic acceptance is ``--spec-decode-acceptance-length AL``: the mean tokens per
verify step including the bonus token, so it must lie in [1, k + 1] for k draft
tokens; anything else is a LaunchError before a server starts. Eval jobs verify for
real and get no such flag.
"""

from __future__ import annotations

from inferx_pipeline.engines.adapter import PORT, EngineAdapter, capture_sizes, render_args
from inferx_pipeline.errors import LaunchError
from inferx_pipeline.matrix.job import BenchmarkJob, JobParallel

# Our method names -> ATOM --method.
SPEC_METHODS: dict[str, str] = {
    "mtp": "mtp",
    "eagle": "eagle",
    "eagle3": "eagle3",
    "dspark": "dspark",
    "draft_model": "draft_model",
}
KV_DTYPES: dict[str, str] = {"fp8": "fp8", "bf16": "bf16", "fp16": "fp16", "fp4": "fp4"}


class AtomAdapter(EngineAdapter):
    """ATOM's OpenAI-compatible server (``atom.entrypoints.openai_server``)."""

    kind = "atom"

    def argv(self, job: BenchmarkJob, parallel: JobParallel) -> list[str]:
        argv = ["python3", "-m", "atom.entrypoints.openai_server", "--model", job.model.hf_id]
        argv += ["--host", "0.0.0.0", "--server-port", PORT, "-tp", str(parallel.tp)]
        if parallel.ep > 1 or parallel.dp_attn:
            argv.append("--enable-expert-parallel")
        if parallel.dp_attn:
            argv.append("--enable-dp-attention")
        if job.max_model_len is not None:
            argv += ["--max-model-len", str(job.max_model_len)]
        if job.max_num_seqs is not None:
            argv += ["--max-num-seqs", str(job.max_num_seqs)]
        if job.model.kv_cache_dtype != "auto":
            argv += ["--kv_cache_dtype", KV_DTYPES[job.model.kv_cache_dtype]]
        if job.engine.gpu_memory_utilization is not None:
            argv += ["--gpu-memory-utilization", str(job.engine.gpu_memory_utilization)]
        sizes = capture_sizes(job)
        if sizes is not None:
            argv += ["--cudagraph-capture-sizes", ",".join(str(s) for s in sizes)]
        return argv + _speculative(job) + render_args(job.engine.args)

    def env(self, job: BenchmarkJob) -> dict[str, str]:
        return dict(job.engine.env)


def _speculative(job: BenchmarkJob) -> list[str]:
    spec = job.spec
    if spec.method == "none":
        return []
    if spec.method not in SPEC_METHODS:
        raise LaunchError(
            f"{job.job_id}: speculative method {spec.method!r} is not supported by ATOM; "
            f"supported: {', '.join(sorted(SPEC_METHODS))}"
        )
    argv = ["--method", SPEC_METHODS[spec.method]]
    if spec.draft_tokens is not None:
        argv += ["--num-speculative-tokens", str(spec.draft_tokens)]
    if spec.draft_model is not None:
        argv += ["--draft-model", spec.draft_model]
    if spec.acceptance == "synthetic" and not job.run_eval and spec.target_al is not None:
        argv += ["--spec-decode-acceptance-length", str(checked_al(job, spec.target_al))]
    return argv


def checked_al(job: BenchmarkJob, al: float) -> float:
    """``al`` when 1 <= al <= k + 1 for the job's k draft tokens, else LaunchError."""
    k = job.spec.draft_tokens or 0
    if not 1.0 <= al <= k + 1:
        raise LaunchError(
            f"{job.job_id}: synthetic acceptance length {al:g} is outside [1, {k + 1}] for "
            f"{k} draft tokens; check the golden curve {job.spec.curve} or draft-tokens"
        )
    return al
