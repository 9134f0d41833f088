"""Server reuse: launches and simulated GPU-hours, grouped servers vs one server per point.

For each of the four seed recipes, every job's benchmark time comes from the simulator's
virtual-time prediction (``inferx_pipeline.sim.predict``, InferenceX's 10 prompts per
concurrency) or, for agentic replay, the recipe's per-point duration; each server launch
costs its model-load time from ``catalog/server-startup.yaml`` (weights per GPU / load
bandwidth + engine init). GPU-hours = GPUs x (launches x load time + benchmark time).

    .venv/bin/python benchmarks/server_reuse.py

Target: at least 3x fewer GPU-hours with grouping on the 8-point 1k/1k seeds.
"""

from __future__ import annotations

import yaml
from pydantic import Field

from inferx_pipeline.catalog import Catalog, cached_catalog
from inferx_pipeline.engines.sim import SimAdapter
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.select import Selection
from inferx_pipeline.plan.build import MatrixRequest, build_matrix
from inferx_pipeline.settings import Settings
from inferx_pipeline.sim.predict import predict
from inferx_pipeline.strict import StrictModel
from inferx_pipeline.sweep.groups import group_jobs

SEEDS = (
    "qwen3.827b-bf16-mi325x-vllm-mtp",
    "qwen3.827b-fp8-h200-vllm-mtp",
    "qwen3.5-fp8-mi300x-sglang-agentic-mtp",
    "minimaxm3-fp8-mi325x-vllm-agentic-mtp",
)
PROMPTS_PER_CONC = 10


class Startup(StrictModel):
    load_gbps: float = Field(gt=0, description="Checkpoint -> HBM, GB/s per GPU.")
    engine_init_s: float = Field(ge=0, description="Process start to healthy, minus loading.")


class StartupData(StrictModel):
    """``catalog/server-startup.yaml``."""

    source: str
    default: Startup
    skus: dict[str, Startup]


def load_time_s(job: BenchmarkJob, catalog: Catalog, startup: StartupData) -> float:
    """Seconds from start to healthy for ``job``'s server (see the data file's note)."""
    rates = startup.skus.get(job.sku, startup.default)
    arch = catalog.model(job.model.family)
    tp = job.parallel.tp if job.parallel else job.gpus
    weights_gb = arch.params_b * catalog.weight_bytes_per_param(job.model.precision) / tp
    return weights_gb / rates.load_gbps + rates.engine_init_s


def bench_time_s(job: BenchmarkJob, settings: Settings) -> float:
    """Seconds one point measures: predicted for fixed-seq-len, the replay duration else."""
    if job.isl is None or job.osl is None:
        return float(job.duration_s or 0)
    config = SimAdapter().sim_config(job, settings.catalog_dir)
    (point,) = predict(config, job.isl, job.osl, [job.conc], PROMPTS_PER_CONC)
    return point.duration_s


def main() -> None:
    settings = Settings()
    catalog = cached_catalog(settings.catalog_dir)
    text = (settings.catalog_dir / "server-startup.yaml").read_text(encoding="utf-8")
    startup = StartupData.model_validate(yaml.safe_load(text))
    print(
        f"{'recipe':<40} {'jobs':>4} {'launches':>13} {'GPU-h grouped':>13} "
        f"{'per point':>10} {'ratio':>6}"
    )
    for recipe in SEEDS:
        request = MatrixRequest(paths=(), selection=Selection(recipes=(recipe,)))
        jobs = build_matrix(request, settings)
        groups = group_jobs(jobs)
        bench = sum(job.gpus * bench_time_s(job, settings) for job in jobs)
        loads = [g.spec_job.gpus * load_time_s(g.spec_job, catalog, startup) for g in groups]
        grouped = bench + sum(loads)
        per_point = bench + sum(job.gpus * load_time_s(job, catalog, startup) for job in jobs)
        print(
            f"{recipe:<40} {len(jobs):>4} {len(groups):>5} vs {len(jobs):>4} "
            f"{grouped / 3600:>13.2f} {per_point / 3600:>10.2f} {per_point / grouped:>5.2f}x"
        )


if __name__ == "__main__":
    main()
