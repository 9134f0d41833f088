"""Fit MBU, MFU and the per-step overhead of an engine x SKU from measured results.

A closed-loop run's schedule does not depend on step durations (see ``predict``), so
each measured row is replayed once in step indices and its mean TPOT becomes a sum over
steps: ``TPOT = sum_s w_s (max(b_s / MBU, f_s / MFU) + c_s + overhead)``, with ``b_s``
the step's bytes / HBM bandwidth, ``f_s`` its FLOPs / peak, ``c_s`` its all-reduce time
and ``w_s`` the share of requests decoding in it. For a fixed choice of which term wins
in each step this is linear in ``(1/MBU, 1/MFU, overhead)``: alternate that choice and a
relative least-squares solve (numpy) until the choice stops changing.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from pydantic import Field, ValidationError

from inferx_pipeline.errors import SimError
from inferx_pipeline.sim.config import SimConfig
from inferx_pipeline.sim.efficiency import Efficiency, load_efficiency
from inferx_pipeline.sim.predict import Trace, checked_core, closed_loop_trace, step_ends
from inferx_pipeline.sim.roofline import allreduce_s, step_bytes, step_flops
from inferx_pipeline.strict import FrozenModel

MAX_ITERATIONS = 50
PROMPTS_PER_CONC = 4


class MeasuredRow(FrozenModel):
    """One measured benchmark point (a real GPU run) without speculative decoding."""

    engine: str
    sku: str
    model_family: str
    precision: str = "bf16"
    kv_dtype: str = "bf16"
    tp: int = Field(default=1, ge=1)
    concurrency: int = Field(ge=1)
    isl: int = Field(ge=1)
    osl: int = Field(ge=2)
    tput_per_gpu: float = Field(gt=0, description="Measured output tokens/s per GPU.")
    tpot_ms: float = Field(gt=0, description="Measured mean TPOT, ms.")


@dataclass(frozen=True, slots=True)
class _Replay:
    """One row's trace as unit terms per step, plus what it must reproduce."""

    row: MeasuredRow
    gpus: int
    bytes_s: np.ndarray  # b_s: seconds at MBU 1
    flops_s: np.ndarray  # f_s: seconds at MFU 1
    comm_s: np.ndarray
    decode_weight: np.ndarray  # w_s
    trace: Trace


def _replay(row: MeasuredRow, prior: Efficiency, catalog_dir: Path) -> _Replay:
    config = SimConfig(
        sku=row.sku, model_family=row.model_family, precision=row.precision,
        kv_dtype=row.kv_dtype, tp=row.tp, engine=row.engine, catalog_dir=catalog_dir,
    )  # fmt: skip
    core = checked_core(config, row.isl, row.osl)
    trace = closed_loop_trace(
        core, row.concurrency, row.concurrency * PROMPTS_PER_CONC, row.isl, row.osl
    )
    dep = core.deployment.model_copy(update={"efficiency": prior})
    weight = np.zeros(len(trace.loads) + 1)
    for span in trace.spans:  # requests decoding in steps first+1 .. last
        weight[span.first + 1] += 1.0
        weight[span.last + 1] -= 1.0
    weight = np.cumsum(weight)[:-1] / (len(trace.spans) * (row.osl - 1))
    loads = trace.loads
    return _Replay(
        row=row,
        gpus=dep.gpus,
        bytes_s=np.array([step_bytes(dep, ld) / dep.hbm_bytes_per_s for ld in loads]),
        flops_s=np.array([step_flops(dep, ld) / dep.peak_flops for ld in loads]),
        comm_s=np.array([allreduce_s(dep, ld.tokens) for ld in loads]),
        decode_weight=weight,
        trace=trace,
    )


def _step_times(rep: _Replay, x: np.ndarray) -> np.ndarray:
    times: np.ndarray = np.maximum(rep.bytes_s * x[0], rep.flops_s * x[1]) + rep.comm_s + x[2]
    return times


def _solve(replays: Sequence[_Replay], x: np.ndarray) -> np.ndarray:
    """One linear solve for the regimes chosen by ``x``; columns it cannot fit keep ``x``."""
    rows, rhs = [], []
    for rep in replays:
        memory = rep.bytes_s * x[0] >= rep.flops_s * x[1]
        w = rep.decode_weight
        y = rep.row.tpot_ms / 1000.0
        features = [np.sum(w * rep.bytes_s * memory), np.sum(w * rep.flops_s * ~memory), np.sum(w)]
        rows.append(np.array(features) / y)  # relative residuals: every row counts alike
        rhs.append((y - np.sum(w * rep.comm_s)) / y)
    a, b = np.array(rows), np.array(rhs)
    # Identifiable columns only, and no more unknowns than rows (MBU first, overhead last).
    free = [j for j in range(3) if np.any(a[:, j] > 0)][: len(replays)]
    fixed = [j for j in range(3) if j not in free]
    b = b - a[:, fixed] @ x[fixed]
    solution = x.copy()
    solution[free] = np.linalg.lstsq(a[:, free], b, rcond=None)[0]
    if solution[2] < 0:  # overhead cannot be negative: pin it at 0 and refit the rest
        solution[2] = 0.0
        cols = [j for j in free if j != 2]
        solution[cols] = np.linalg.lstsq(a[:, cols], b, rcond=None)[0]
    return solution


def _relative_errors(replays: Sequence[_Replay], x: np.ndarray) -> tuple[float, float]:
    """RMS relative error of (TPOT, output tok/s/GPU) under ``x``."""
    tpot_err, tput_err = [], []
    for rep in replays:
        times = _step_times(rep, x)
        tpot = float(np.sum(rep.decode_weight * times))
        tpot_err.append(tpot * 1000.0 / rep.row.tpot_ms - 1.0)
        total = step_ends(times.tolist())[-1]
        tput = len(rep.trace.spans) * rep.row.osl / total / rep.gpus
        tput_err.append(tput / rep.row.tput_per_gpu - 1.0)
    return float(np.sqrt(np.mean(np.square(tpot_err)))), float(
        np.sqrt(np.mean(np.square(tput_err)))
    )


def fit_profile(rows: Sequence[MeasuredRow], prior: Efficiency, catalog_dir: Path) -> Efficiency:
    """A calibrated profile for the rows' (engine, sku); the all-reduce latency stays the prior's.

    Raises SimError when rows mix engines or SKUs, or give MBU/MFU outside (0, 1].
    """
    keys = {(row.engine, row.sku) for row in rows}
    if len(keys) != 1:
        raise SimError(f"fit one engine x SKU at a time; rows have {sorted(keys)}")
    replays = [_replay(row, prior, catalog_dir) for row in rows]
    x = np.array([1.0 / prior.mbu, 1.0 / prior.mfu, prior.step_overhead_ms / 1000.0])
    for _ in range(MAX_ITERATIONS):
        updated = _solve(replays, x)
        if np.allclose(updated, x, rtol=1e-9, atol=1e-12):
            break
        x = updated
    mbu, mfu = 1.0 / x[0], 1.0 / x[1]
    if not (0 < mbu <= 1 and 0 < mfu <= 1):
        raise SimError(
            f"fit gives mbu={mbu:.3f}, mfu={mfu:.3f} for {prior.engine} on {rows[0].sku}; "
            "expected both in (0, 1]: check the rows' units (TPOT in ms, tok/s per GPU)"
        )
    tpot_rms, tput_rms = _relative_errors(replays, x)
    engine, sku = keys.pop()
    return Efficiency(
        engine=engine, sku=sku, mbu=round(mbu, 4), mfu=round(mfu, 4),
        step_overhead_ms=round(x[2] * 1000.0, 4),
        allreduce_latency_us=prior.allreduce_latency_us, calibrated=True,
        note=f"least-squares fit to {len(rows)} measured rows; RMS error TPOT "
        f"{tpot_rms:.1%}, output tok/s/GPU {tput_rms:.1%}",
    )  # fmt: skip


def profiles_yaml(profiles: Iterable[Efficiency]) -> str:
    """YAML list items to paste under ``profiles:`` in ``catalog/sim-efficiency.yaml``."""
    entries = [profile.model_dump() for profile in profiles]
    return yaml.safe_dump({"profiles": entries}, sort_keys=False)


def calibrate(rows: Sequence[MeasuredRow], catalog_dir: Path) -> list[Efficiency]:
    """One fitted profile per (engine, sku) in ``rows``, each starting from its current one."""
    table = load_efficiency(catalog_dir)
    groups: dict[tuple[str, str], list[MeasuredRow]] = {}
    for row in rows:
        groups.setdefault((row.engine, row.sku), []).append(row)
    return [
        fit_profile(group, table.lookup(engine, sku), catalog_dir)
        for (engine, sku), group in sorted(groups.items())
    ]


def load_rows(path: Path) -> list[MeasuredRow]:
    """Measured rows from a ``.csv`` (header = field names) or ``.jsonl`` file.

    Raises SimError naming the file and line of the first invalid row.
    """
    try:
        text = path.read_text()
    except OSError as err:
        raise SimError(f"{path}: cannot read measured rows: {err}") from err
    if path.suffix == ".csv":
        records: list[object] = list(csv.DictReader(io.StringIO(text)))
        first_line = 2  # after the header
    else:
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
        first_line = 1
    rows = []
    for number, record in enumerate(records, start=first_line):
        try:
            rows.append(MeasuredRow.model_validate(record))
        except ValidationError as err:
            raise SimError(f"{path}:{number}: invalid measured row: {err}") from err
    if not rows:
        raise SimError(f"{path}: no measured rows; expected CSV with a header or JSON lines")
    return rows
