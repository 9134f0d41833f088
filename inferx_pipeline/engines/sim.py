"""The simulator as an engine: any single-node job -> ``inferx sim serve`` standing in for it.

The simulated server takes the job's SKU (and so that SKU's catalog data), model family,
precision, KV dtype, tp/ep/dp-attn, max-num-seqs, max-model-len and speculative
decoding, and answers to the job's model name, so the client talks to it exactly as to
the real engine. Its efficiency profile is the job's framework. It needs no GPU: the
spec asks for none, whatever the SKU, so the Docker launcher runs the simulator image
without a GPU block and the subprocess launcher runs ``python -m inferx_pipeline``.

Real-acceptance jobs (and evals) have no golden AL; the simulator still needs one, so
they run at ``1 + real_acceptance_fraction x k``, an assumption stated in ``SimOptions``.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from inferx_pipeline.catalog import Sku
from inferx_pipeline.engines.adapter import PORT, EngineAdapter
from inferx_pipeline.errors import LaunchError
from inferx_pipeline.launch.spec import GpuRequest, ServerSpec
from inferx_pipeline.matrix.job import BenchmarkJob, JobParallel
from inferx_pipeline.sim.config import SimConfig
from inferx_pipeline.strict import FrozenModel

SIM_IMAGE = "inferx-sim:latest"
LABEL_SIMULATED = "inferx.simulated"
# The simulator sizes KV per element dtype; "auto" follows the weights (bf16 activations).
AUTO_KV_DTYPE = "bf16"
SERVE_ARGS = 5  # python -m inferx_pipeline sim serve


class SimOptions(FrozenModel):
    """How the simulated stand-in behaves; defaults are a realistic (slow) run."""

    image: str = Field(default=SIM_IMAGE, description="Simulator image for Docker runs.")
    load_time_s: float | None = Field(
        default=None, ge=0, description="Simulated model load; None = the simulator's default."
    )
    time_scale: float = Field(default=1.0, gt=0, description="Multiplies simulated durations.")
    error_rate: float = Field(default=0.0, ge=0, le=1, description="Injected HTTP 500 fraction.")
    crash_after_tokens: int | None = Field(
        default=None, ge=1, description="Injected engine death after this many tokens."
    )
    seed: int = Field(default=0, description="Simulator seed (acceptance draws, errors).")
    startup_timeout_s: float = Field(default=120.0, gt=0, description="Health deadline, s.")
    real_acceptance_fraction: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="Assumed accepted share of the k drafts for real-acceptance jobs.",
    )
    answer_key: Path | None = Field(
        default=None,
        description="Answer key (`inferx sim serve --answer-key`): evals score its answers, "
        "not filler; a path the simulator's process reads.",
    )
    answer_share: float = Field(
        default=1.0, ge=0, le=1, description="Share of the answer key answered right."
    )

    @model_validator(mode="after")
    def _answer_share_has_a_key(self) -> SimOptions:
        if self.answer_key is None and self.answer_share != 1.0:
            raise ValueError("answer_share needs answer_key (--sim-answer-key)")
        return self


class SimAdapter(EngineAdapter):
    """Runs any single-node job on the simulated engine (``inferx sim serve``)."""

    kind = "sim"

    def __init__(self, options: SimOptions | None = None) -> None:
        self.options = options or SimOptions()
        self.startup_timeout_s = self.options.startup_timeout_s

    def argv(self, job: BenchmarkJob, parallel: JobParallel) -> list[str]:
        argv = ["python", "-m", "inferx_pipeline", "sim", "serve", "--host", "127.0.0.1"]
        argv += ["--port", PORT, "--sku", job.sku, "--model-family", job.model.family]
        argv += ["--served-model-name", job.model.hf_id, "--engine", job.engine.framework]
        argv += ["--precision", job.model.precision, "--kv-dtype", _kv_dtype(job)]
        argv += ["--tp", str(parallel.tp), "--ep", str(parallel.ep)]
        if parallel.dp_attn:
            argv.append("--dp-attn")
        if job.max_num_seqs is not None:
            argv += ["--max-num-seqs", str(job.max_num_seqs)]
        if job.max_model_len is not None:
            argv += ["--max-model-len", str(job.max_model_len)]
        if job.engine.gpu_memory_utilization is not None:
            argv += ["--gpu-memory-utilization", str(job.engine.gpu_memory_utilization)]
        return argv + self._speculative(job) + self._knobs()

    def env(self, job: BenchmarkJob) -> dict[str, str]:
        return {}

    def server_spec(self, job: BenchmarkJob, *, sku: Sku) -> ServerSpec:
        """The real adapter's spec shape, but no GPUs, the simulator image and a sim label."""
        spec = super().server_spec(job, sku=sku)
        return spec.model_copy(
            update={
                "image": self.options.image,
                "gpus": GpuRequest(vendor="none", count=0),
                "labels": {**spec.labels, LABEL_SIMULATED: "true"},
            }
        )

    def sim_config(self, job: BenchmarkJob, catalog_dir: Path) -> SimConfig:
        """The simulator's config for ``job``, parsed from the very argv the server gets.

        Raises LaunchError for multinode jobs (no single-node server).
        """
        if job.parallel is None:
            raise LaunchError(f"{job.job_id}: multinode jobs have no simulated server")
        fields: dict[str, object] = {"port": 0, "catalog_dir": catalog_dir}
        args = self.argv(job, job.parallel)[SERVE_ARGS:]
        for index, arg in enumerate(args):
            if arg.startswith("--") and arg not in ("--port", "--served-model-name"):
                bare = index + 1 == len(args) or args[index + 1].startswith("--")
                fields[arg[2:].replace("-", "_")] = True if bare else args[index + 1]
        return SimConfig.model_validate(fields)

    def acceptance_length(self, job: BenchmarkJob) -> float | None:
        """The AL the simulator runs ``job`` at: the golden AL, else the real-acceptance guess."""
        spec = job.spec
        if spec.method == "none" or not spec.draft_tokens:
            return None
        if spec.acceptance == "synthetic" and not job.run_eval and spec.target_al is not None:
            return spec.target_al
        return round(1 + self.options.real_acceptance_fraction * spec.draft_tokens, 6)

    def _speculative(self, job: BenchmarkJob) -> list[str]:
        al = self.acceptance_length(job)
        if al is None:
            return []
        tokens = str(job.spec.draft_tokens)
        return ["--spec-method", job.spec.method, "--num-speculative-tokens", tokens,
                "--acceptance-length", f"{al:g}"]  # fmt: skip

    def _knobs(self) -> list[str]:
        o = self.options
        argv = ["--seed", str(o.seed), "--time-scale", f"{o.time_scale:g}"]
        if o.load_time_s is not None:
            argv += ["--load-time-s", f"{o.load_time_s:g}"]
        if o.error_rate:
            argv += ["--error-rate", f"{o.error_rate:g}"]
        if o.crash_after_tokens is not None:
            argv += ["--crash-after-tokens", str(o.crash_after_tokens)]
        if o.answer_key is not None:
            argv += ["--answer-key", str(o.answer_key), "--answer-share", f"{o.answer_share:g}"]
        return argv


def _kv_dtype(job: BenchmarkJob) -> str:
    dtype = job.model.kv_cache_dtype
    return AUTO_KV_DTYPE if dtype == "auto" else dtype
