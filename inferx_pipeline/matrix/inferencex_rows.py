"""Jobs -> InferenceX matrix rows (the JSON its generator emits), for parity and hand-off.

Single-node rows carry one concurrency; multinode fixed-seq-len rows carry the list of
concurrencies of one server (InferenceX runs them in one allocation); multinode agentic
rows carry ``[conc]``. ``run-eval`` is true on a benchmark row whose job has an eval twin;
eval jobs themselves are not rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.recipes.scenarios import Component, Worker

EVAL_SUFFIX = "/eval"


def _component(value: Component) -> dict[str, str]:
    return value.model_dump(exclude_none=True)


def _worker(worker: Worker) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "num-worker": worker.num_worker,
        "tp": worker.tp,
        "ep": worker.ep,
        "dp-attn": worker.dp_attn,
    }
    if worker.additional_settings is not None:
        doc["additional-settings"] = list(worker.additional_settings)
    doc.update({"pp": worker.pp, "dcp-size": worker.dcp_size, "pcp-size": worker.pcp_size})
    return doc


def _head(job: BenchmarkJob) -> dict[str, Any]:
    return {
        "image": job.engine.image,
        "model": job.model.hf_id,
        "model-prefix": job.model.family,
        "precision": job.model.precision,
        "framework": job.engine.framework,
        "runner": job.runner,
    }


def _topology(job: BenchmarkJob) -> dict[str, Any]:
    if job.parallel is not None:
        p = job.parallel
        return {
            "tp": p.tp,
            "pp": p.pp,
            "dcp-size": p.dcp_size,
            "pcp-size": p.pcp_size,
            "ep": p.ep,
            "dp-attn": p.dp_attn,
        }
    assert job.workers is not None  # a job is single-node or multinode
    return {"prefill": _worker(job.workers.prefill), "decode": _worker(job.workers.decode)}


def _tail(job: BenchmarkJob, row: dict[str, Any]) -> dict[str, Any]:
    if job.scenario == "agentic-coding":
        row["scenario-type"] = job.scenario
        if job.kv_offload_backend is not None:
            row["kv-offload-backend"] = _component(job.kv_offload_backend)
    if job.router is not None:
        row["router"] = _component(job.router)
    if job.kv_p2p_transfer is not None:
        row["kv-p2p-transfer"] = job.kv_p2p_transfer
    return row


def job_row(job: BenchmarkJob, *, run_eval: bool) -> dict[str, Any]:
    """The InferenceX row of one job (multinode fixed-seq-len: ``conc`` is ``[conc]``)."""
    row = _head(job)
    conc: int | list[int] = [job.conc] if job.multinode else job.conc
    if job.scenario == "fixed-seq-len":
        row.update({"isl": job.isl, "osl": job.osl, "spec-decoding": job.spec.arm})
        row.update(_topology(job))
        row.update({"conc": conc, "max-model-len": job.max_model_len, "exp-name": job.exp_name})
        row.update({"disagg": job.disagg, "run-eval": run_eval})
        return _tail(job, row)
    row["spec-decoding"] = job.spec.arm
    row.update(_topology(job))
    row.update(
        {
            "conc": conc,
            "kv-offloading": job.kv_offloading,
            "total-cpu-dram-gb": job.total_cpu_dram_gb,
            "duration": job.duration_s,
            "exp-name": job.exp_name,
        }
    )
    if job.multinode:
        row["disagg"] = job.disagg
    return _tail(job, row)


def inferencex_rows(jobs: Sequence[BenchmarkJob]) -> list[dict[str, Any]]:
    """InferenceX rows for ``jobs``, in job order (multinode fixed rows at first appearance)."""
    evaluated = {j.job_id.removesuffix(EVAL_SUFFIX) for j in jobs if j.run_eval}
    rows: list[dict[str, Any]] = []
    servers: dict[tuple[str, str, str], dict[str, Any]] = {}
    for job in jobs:
        if job.run_eval:
            continue
        run_eval = job.job_id in evaluated
        if job.multinode and job.scenario == "fixed-seq-len":
            key = (job.recipe_id, job.label, job.server_key)
            if key in servers:
                servers[key]["conc"].append(job.conc)
                servers[key]["run-eval"] = servers[key]["run-eval"] or run_eval
                continue
            servers[key] = job_row(job, run_eval=run_eval)
            rows.append(servers[key])
            continue
        rows.append(job_row(job, run_eval=run_eval))
    return rows
