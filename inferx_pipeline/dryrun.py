"""Dry-run a recipe before GPUs exist: the simulator's predicted curve per server group.

Each server group of the selected jobs (one server, many concurrencies) becomes the
simulator config the sweep would launch for it (``SimAdapter.sim_config``: the very
argv the ``sim`` engine passes to ``inferx sim serve``), and ``sim.predict`` runs the
engine core in virtual time at each of the group's concurrencies.

Fixed-seq-len groups are predicted at their exact ISL/OSL. An agentic group replays a
trace of growing multi-turn contexts, which a closed loop of one request shape cannot;
it is predicted at the trace's mean turn (mean prompt context including the shared
prefix and earlier turns, mean output), think time ignored, and marked approximate.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from statistics import fmean

from pydantic import Field

from inferx_pipeline.bench.agentic import AgenticSpec
from inferx_pipeline.bench.trace import TraceSession, load_trace
from inferx_pipeline.engines.sim import SimAdapter
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.sim.predict import DEFAULT_PROMPTS_PER_CONC, PredictPoint, predict
from inferx_pipeline.strict import FrozenModel
from inferx_pipeline.sweep.groups import ServerGroup, group_jobs


class GroupPrediction(FrozenModel):
    """The predicted curve of one server group."""

    group: str = Field(description="``<recipe>/<scenario>/<layout>``, the job id without conc.")
    sku: str
    gpus: int = Field(description="GPUs of the server (per-GPU numbers divide by these).")
    isl: int = Field(description="Prompt tokens per predicted request.")
    osl: int = Field(description="Output tokens per predicted request.")
    approximate: bool = Field(description="True for agentic groups (mean-turn closed loop).")
    points: tuple[PredictPoint, ...] = Field(description="One per concurrency, ascending.")


def mean_turn(sessions: Sequence[TraceSession]) -> tuple[int, int]:
    """(mean prompt tokens, mean output tokens) over every turn of ``sessions``.

    A turn's prompt is the shared prefix plus every earlier input and output of its
    session plus its own input, as the agentic replay sends it. Rounded to tokens.
    """
    prompts: list[int] = []
    outputs: list[int] = []
    for session in sessions:
        context = session.prefix_len
        for turn in session.turns:
            context += turn.input_len
            prompts.append(context)
            outputs.append(turn.output_len)
            context += turn.output_len
    return round(fmean(prompts)), round(fmean(outputs))


def request_shape(job: BenchmarkJob) -> tuple[int, int, bool]:
    """(isl, osl, approximate) to predict ``job`` with; raises BenchError for a bad trace."""
    if job.isl is not None and job.osl is not None:
        return job.isl, job.osl, False
    trace = job.trace or AgenticSpec.model_fields["trace"].get_default()
    isl, osl = mean_turn(load_trace(trace))
    return isl, osl, True


def predict_group(
    group: ServerGroup,
    catalog_dir: Path,
    concurrencies: Sequence[int] | None = None,
    prompts_per_conc: int = DEFAULT_PROMPTS_PER_CONC,
) -> GroupPrediction:
    """The simulator's curve for ``group`` at its own concurrencies (or ``concurrencies``).

    Raises LaunchError for multinode groups, SimError when the request shape does not
    fit the server's context, CatalogError for an unknown SKU or model.
    """
    job = group.spec_job
    config = SimAdapter().sim_config(job, catalog_dir)
    isl, osl, approximate = request_shape(job)
    levels = sorted(concurrencies or group.concurrencies)
    points = predict(config, isl, osl, levels, prompts_per_conc)
    return GroupPrediction(
        group=group.name, sku=job.sku, gpus=job.gpus, isl=isl, osl=osl,
        approximate=approximate, points=tuple(points),
    )  # fmt: skip


def predict_jobs(
    jobs: Sequence[BenchmarkJob],
    catalog_dir: Path,
    concurrencies: Sequence[int] | None = None,
    prompts_per_conc: int = DEFAULT_PROMPTS_PER_CONC,
) -> list[GroupPrediction]:
    """``predict_group`` for every server group of ``jobs``, in first-seen order."""
    return [
        predict_group(group, catalog_dir, concurrencies, prompts_per_conc)
        for group in group_jobs(jobs)
    ]
