"""Calibration: constants used to generate rows are recovered by the least-squares fit."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from inferx_pipeline.errors import SimError
from inferx_pipeline.settings import Settings
from inferx_pipeline.sim.calibrate import (
    PROMPTS_PER_CONC,
    MeasuredRow,
    calibrate,
    load_rows,
    profiles_yaml,
)
from inferx_pipeline.sim.config import SimConfig
from inferx_pipeline.sim.efficiency import EfficiencyTable
from inferx_pipeline.sim.predict import predict

TRUTH = {
    "engine": "vllm", "sku": "h100", "mbu": 0.62, "mfu": 0.33, "step_overhead_ms": 2.7,
    "allreduce_latency_us": 10.0, "calibrated": False, "note": "ground truth for the test",
}  # fmt: skip


def _rows_from(catalog: Path) -> list[MeasuredRow]:
    rows = []
    for isl, osl in ((1024, 64), (128, 96)):
        config = SimConfig(sku="h100", model_family="qwen3.8-27b", catalog_dir=catalog)
        for p in predict(config, isl, osl, [1, 4, 32, 128], prompts_per_conc=PROMPTS_PER_CONC):
            rows.append(
                MeasuredRow(
                    engine="vllm",
                    sku="h100",
                    model_family="qwen3.8-27b",
                    concurrency=p.concurrency,
                    isl=isl,
                    osl=osl,
                    tput_per_gpu=p.output_tput_per_gpu,
                    tpot_ms=p.mean_tpot_ms,
                )
            )
    return rows


@pytest.fixture
def truth_catalog(tmp_path: Path) -> Path:
    catalog = tmp_path / "catalog"
    shutil.copytree(Settings().catalog_dir, catalog)
    path = catalog / "sim-efficiency.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["profiles"].append(TRUTH)
    path.write_text(yaml.safe_dump(doc))
    return catalog


def test_fit_recovers_the_generating_constants(truth_catalog: Path, tmp_path: Path) -> None:
    rows = _rows_from(truth_catalog)
    (profile,) = calibrate(rows, Settings().catalog_dir)  # starts from the uncalibrated prior
    assert profile.calibrated
    assert profile.mbu == pytest.approx(0.62, rel=0.01)
    assert profile.mfu == pytest.approx(0.33, rel=0.01)
    assert profile.step_overhead_ms == pytest.approx(2.7, rel=0.02)
    emitted = yaml.safe_load(profiles_yaml([profile]))
    EfficiencyTable.model_validate({"source": "fit", **emitted})
    assert "8 measured rows" in emitted["profiles"][0]["note"]


def test_rows_load_from_jsonl_and_csv(tmp_path: Path) -> None:
    row = MeasuredRow(
        engine="vllm", sku="h100", model_family="qwen3.8-27b", concurrency=4, isl=128,
        osl=64, tput_per_gpu=150.0, tpot_ms=24.0,
    )  # fmt: skip
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text(row.model_dump_json() + "\n")
    csv = tmp_path / "rows.csv"
    fields = row.model_dump()
    csv.write_text(",".join(fields) + "\n" + ",".join(str(v) for v in fields.values()) + "\n")
    assert load_rows(jsonl) == load_rows(csv) == [row]


def test_bad_row_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"engine": "vllm"}\n')
    with pytest.raises(SimError, match=r"rows.jsonl:1: invalid measured row"):
        load_rows(path)


def test_implausible_units_are_refused() -> None:
    row = MeasuredRow(
        engine="vllm", sku="h100", model_family="qwen3.8-27b", concurrency=1, isl=128,
        osl=64, tput_per_gpu=40.0, tpot_ms=0.5,
    )  # fmt: skip
    with pytest.raises(SimError, match="expected both in \\(0, 1\\]"):
        calibrate([row], Settings().catalog_dir)
