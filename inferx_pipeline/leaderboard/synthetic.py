"""Synthetic result rows with exactly the ResultRecord columns: test fixtures and benchmarks.

``frame_from_rows`` fills hand-made rows with neutral defaults (tests state only what they
exercise); ``synthetic_frame`` builds a large, plausible sweep history vectorized with numpy
(throughput rising and interactivity falling with concurrency, per-image noise, and a few
injected regressions) for the benchmark and the site tests.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd

from inferx_pipeline.catalog import Catalog

_T0 = datetime(2026, 1, 1, tzinfo=UTC)
_STAT_SCALE = {"mean": 0.97, "median": 1.0, "p90": 0.85, "p99": 0.7}  # intvty at a statistic

# Neutral values for every ResultRecord column: an official, valid fixed-seq-len point.
RECORD_DEFAULTS: dict[str, object] = {
    "result_id": "0" * 64, "recipe_id": "recipe-a", "fingerprint": "f" * 64, "job_id": "job-a",
    "model": "deepseek-ai/DeepSeek-R1-0528", "model_family": "dsr1", "precision": "fp8",
    "sku": "h200", "vendor": "nvidia", "framework": "vllm",
    "image": "vllm/vllm-openai:v1", "image_tag": "v1", "image_digest": None,
    "engine_version": None, "scenario": "fixed-seq-len", "isl": 1024, "osl": 1024,
    "tp": 8, "ep": 1, "pp": 1, "pcp": 1, "dp_attn": False, "kv_offload": "none",
    "kv_offload_backend": None, "spec_method": "none", "draft_tokens": 0,
    "acceptance_mode": "none", "target_al": None, "realized_al": None, "thinking": "none",
    "gpus": 8, "conc": 1,
    "deployment": None, "deployment_gpus": None, "disagg": False, "prefill_workers": None,
    "prefill_tp": None, "prefill_ep": None, "decode_workers": None, "decode_tp": None,
    "decode_ep": None, "router": None, "kv_transfer": None,
    "tput_per_gpu": 100.0, "input_tput_per_gpu": 50.0, "output_tput_per_gpu": 50.0,
    "request_throughput": 1.0,
    **{f"{m}_{s}_s": 0.1 for m in ("ttft", "tpot", "itl", "e2el") for s in _STAT_SCALE},
    **{f"intvty_{s}": 50.0 for s in _STAT_SCALE},
    "success_rate": 1.0, "measured_isl": 1024.0, "measured_osl": 1024.0, "duration_s": 60.0,
    "num_requests": 100, "failed_requests": 0,
    "run_id": "run-a", "attempt": 1, "started_at": _T0, "finished_at": _T0 + timedelta(minutes=1),
    "client_version": "0.1.0", "simulated": False, "official": True, "status": "ok",
    "valid": True, "source": "inferx", "artifact_sha256": "a" * 64, "artifacts": "{}",
    "slurm_job_id": None, "slurm_cluster": None,
    **{f"e2e_intvty_{s}": None for s in _STAT_SCALE},
    "pr_number": None, "head_sha": None, "measured_in": None,
}  # fmt: skip
RECORD_COLUMNS: tuple[str, ...] = tuple(RECORD_DEFAULTS)


def frame_from_rows(rows: Iterable[Mapping[str, object]]) -> pd.DataFrame:
    """A frame of ResultRecord columns: each row is ``RECORD_DEFAULTS`` updated by its keys.

    Raises KeyError on a key that is not a ResultRecord column (a typo in a test).
    """
    records = []
    for row in rows:
        unknown = set(row) - set(RECORD_DEFAULTS)
        if unknown:
            raise KeyError(f"not ResultRecord columns: {sorted(unknown)}")
        records.append({**RECORD_DEFAULTS, **row})
    return pd.DataFrame.from_records(records, columns=list(RECORD_COLUMNS))


_FRAMEWORKS = ("vllm", "sglang", "trt")
_PRECISIONS = ("fp8", "fp4")
_SPECS = ("none", "mtp")
_WORKLOADS = ((1024, 1024), (1024, 8192), (8192, 1024))
_TPS = (2, 4, 8)
_CONCS = (4, 8, 16, 32, 64, 128, 256, 512)
ROWS_PER_RECIPE_IMAGE = len(_WORKLOADS) * len(_TPS) * len(_CONCS)


def _recipes(catalog: Catalog, count: int, rng: np.random.Generator) -> pd.DataFrame:
    priced = [s for s in catalog.skus.values() if s.id in catalog.prices.prices]
    models = [(arch.hf_ids[0], arch.id) for arch in catalog.models.values()]
    combos = list(itertools.product(models, priced, _FRAMEWORKS, _PRECISIONS, _SPECS))
    picks = rng.permutation(len(combos))[:count]
    if count > len(combos):
        picks = np.resize(rng.permutation(len(combos)), count)
    rows = []
    for n, i in enumerate(picks):
        (model, family), sku, framework, precision, spec = combos[i]
        rows.append({
            "recipe_id": f"{family}-{precision}-{sku.id}-{framework}-{spec}-{n}",
            "model": model, "model_family": family, "precision": precision, "sku": sku.id,
            "vendor": sku.vendor, "framework": framework, "spec_method": spec,
            "speed": sku.hbm_tbps * (1.6 if precision == "fp4" else 1.0)
            * (1.3 if spec == "mtp" else 1.0) * rng.uniform(0.8, 1.2),
        })  # fmt: skip
    return pd.DataFrame(rows)


def synthetic_frame(
    catalog: Catalog, n_rows: int, images: int = 10, seed: int = 0, simulated: bool = True
) -> pd.DataFrame:
    """About ``n_rows`` rows (a whole number of recipe x image sweeps, at least one).

    Each recipe sweeps 3 workloads x 3 TP sizes x 8 concurrencies per image over ``images``
    image tags; one recipe in ten loses 15 % throughput on its second-to-last image.
    """
    rng = np.random.default_rng(seed)
    n_recipes = max(1, round(n_rows / (ROWS_PER_RECIPE_IMAGE * images)))
    recipes = _recipes(catalog, n_recipes, rng)
    grid = pd.MultiIndex.from_product(
        [range(n_recipes), range(images), range(len(_WORKLOADS)), _TPS, _CONCS],
        names=["r", "image_n", "w", "tp", "conc"],
    ).to_frame(index=False)
    frame = recipes.iloc[grid["r"].to_numpy()].reset_index(drop=True)
    frame = pd.concat([frame, grid], axis=1)
    return _measure(frame, rng, simulated)


def _measure(frame: pd.DataFrame, rng: np.random.Generator, simulated: bool) -> pd.DataFrame:
    n = len(frame)
    isl = np.array([w[0] for w in _WORKLOADS])[frame["w"]]
    osl = np.array([w[1] for w in _WORKLOADS])[frame["w"]]
    tp, conc = frame["tp"].to_numpy(), frame["conc"].to_numpy()
    image_n = frame["image_n"].to_numpy()
    noise = rng.lognormal(0.0, 0.01, n)
    last = int(image_n.max())
    regressed = (frame["r"].to_numpy() % 10 == 3) & (image_n == max(last - 1, 0))
    speed = frame["speed"].to_numpy() * noise * np.where(regressed, 0.85, 1.0)
    intvty = 40.0 * speed * (tp / 8) ** 0.3 / (1 + conc / (24.0 * tp / 8))
    out_tput = conc * intvty / tp
    started = pd.Timestamp(_T0) + pd.to_timedelta(image_n, unit="D")
    out = {
        "result_id": [f"{i:064x}" for i in range(n)],
        "recipe_id": frame["recipe_id"],
        "fingerprint": [
            f"{r:032x}{i:016x}{t:016x}" for r, i, t in zip(frame["r"], image_n, tp, strict=True)
        ],
        "job_id": frame["recipe_id"] + "-w" + frame["w"].astype(str) + "-tp" + tp.astype(str),
        "model": frame["model"], "model_family": frame["model_family"],
        "precision": frame["precision"], "sku": frame["sku"], "vendor": frame["vendor"],
        "framework": frame["framework"],
        "image": frame["framework"] + "/server:v" + pd.Series(image_n).astype(str),
        "image_tag": "v" + pd.Series(image_n).astype(str).str.zfill(3),
        "image_digest": None, "engine_version": None, "scenario": "fixed-seq-len",
        "isl": isl, "osl": osl, "tp": tp, "ep": 1, "pp": 1, "pcp": 1, "dp_attn": False,
        "kv_offload": "none", "kv_offload_backend": None, "spec_method": frame["spec_method"],
        "draft_tokens": np.where(frame["spec_method"] == "mtp", 3, 0),
        "acceptance_mode": np.where(frame["spec_method"] == "mtp", "synthetic", "none"),
        "target_al": None, "realized_al": None, "thinking": "none", "gpus": tp, "conc": conc,
        "tput_per_gpu": out_tput * (isl + osl) / osl,
        "input_tput_per_gpu": out_tput * isl / osl, "output_tput_per_gpu": out_tput,
        "request_throughput": conc * intvty / osl,
    }  # fmt: skip
    ttft = isl / (20000.0 * speed) * (1 + conc / 64)
    for s, scale in _STAT_SCALE.items():
        tpot = 1.0 / (intvty * scale)
        tail = 1 / scale
        out.update({
            f"ttft_{s}_s": ttft * tail, f"tpot_{s}_s": tpot, f"itl_{s}_s": tpot,
            f"e2el_{s}_s": ttft * tail + osl * tpot, f"intvty_{s}": intvty * scale,
            f"e2e_intvty_{s}": osl / (ttft * tail + osl * tpot),
        })  # fmt: skip
    out.update({
        "success_rate": 1.0, "measured_isl": isl.astype(float), "measured_osl": osl.astype(float),
        "duration_s": 60.0, "num_requests": conc * 10, "failed_requests": 0,
        "run_id": "run-" + pd.Series(image_n).astype(str), "attempt": 1,
        "started_at": started, "finished_at": started + pd.Timedelta(minutes=5),
        "client_version": "0.1.0", "simulated": simulated, "official": not simulated,
        "status": "ok", "valid": True, "source": "inferx", "disagg": False,
        "artifact_sha256": [f"{i:064x}" for i in range(n)], "artifacts": "{}",
    })  # fmt: skip
    return pd.DataFrame(out, columns=list(RECORD_COLUMNS))
