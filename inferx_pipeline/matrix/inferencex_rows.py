"""Jobs -> InferenceX matrix rows (the JSON its generator emits), for parity and hand-off.

Single-node rows carry one concurrency; multinode fixed-seq-len rows carry the list of
concurrencies of one search-space row (InferenceX runs them in one allocation); multinode
agentic rows carry ``[conc]``. ``run-eval`` is true on a row whose job has an eval twin;
eval jobs themselves are not rows. Fixed-seq-len rows always carry ``run-eval``, agentic
rows only when evals were selected. A multinode eval row names its eval concurrency in
``eval-conc``. In mode ``all`` the multinode rows of one evaluated server merge into one
row with the sorted union of concurrencies: fixed-seq-len rows then evaluate each of them
(``eval-all-concs``), agentic rows the highest (``eval-conc``). Eval-only rows (modes
that run evals only) are the ``run-eval`` rows, each with ``eval-only: true``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from inferx_pipeline.matrix.evals import EvalMode
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


@dataclass(slots=True)
class _Row:
    """The jobs of one row: the first gives every field but ``conc``."""

    first: BenchmarkJob
    merged: bool
    concs: list[int] = field(default_factory=list)
    eval_concs: list[int] = field(default_factory=list)


def _row_key(job: BenchmarkJob, merged: set[str]) -> tuple[str, ...] | None:
    if job.server_key in merged:
        return (job.server_key,)
    if job.multinode and job.scenario == "fixed-seq-len":
        return (job.recipe_id, job.label, job.server_key)
    return None


def _grouped(jobs: Sequence[BenchmarkJob], evals: EvalMode) -> list[_Row]:
    twins = {j.job_id.removesuffix(EVAL_SUFFIX) for j in jobs if j.run_eval}
    merged: set[str] = set()
    if evals == "all":  # a twin's own server key differs (real acceptance): use its job's
        merged = {j.server_key for j in jobs if j.multinode and j.job_id in twins}
    rows: list[_Row] = []
    keyed: dict[tuple[str, ...], _Row] = {}
    for job in jobs:
        if job.run_eval:
            continue
        key = _row_key(job, merged)
        row = keyed.get(key) if key is not None else None
        if row is None:
            row = _Row(first=job, merged=job.server_key in merged)
            rows.append(row)
            if key is not None:
                keyed[key] = row
        row.concs.append(job.conc)
        if job.job_id in twins:
            row.eval_concs.append(job.conc)
    return rows


def _row_doc(row: _Row, evals: EvalMode, eval_only: bool) -> dict[str, Any]:
    job = row.first
    doc = job_row(job, run_eval=bool(row.eval_concs))
    if job.multinode:
        doc["conc"] = sorted(set(row.concs)) if row.merged else row.concs
    if evals != "none":
        doc["run-eval"] = bool(row.eval_concs)
    if row.merged and job.scenario == "fixed-seq-len":
        doc["eval-all-concs"] = True
    elif job.multinode and row.eval_concs:
        doc["eval-conc"] = max(row.eval_concs)
    if eval_only:
        doc["eval-only"] = True
    return doc


def inferencex_rows(
    jobs: Sequence[BenchmarkJob], *, evals: EvalMode = "none", eval_only: bool = False
) -> list[dict[str, Any]]:
    """InferenceX rows for ``jobs`` (benchmark jobs and their eval twins), in job order.

    ``evals`` is the mode the twins were selected in; ``eval_only`` keeps only the rows
    with an eval (the benchmark jobs of those rows must still be in ``jobs``). Merged and
    multinode fixed-seq-len rows appear where their first job does.
    """
    rows = [_row_doc(row, evals, eval_only) for row in _grouped(jobs, evals)]
    return [row for row in rows if row.get("run-eval") or not eval_only]
