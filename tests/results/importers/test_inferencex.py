"""InferenceX agg rows: import mapping, rejections, and agg -> record -> export -> the same row."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from inferx_pipeline.errors import MalformedArtifactError
from inferx_pipeline.results.export import inferencex_rows
from inferx_pipeline.results.importers import IMPORTERS, ImportContext, importer_for
from inferx_pipeline.results.record import RECORD_COLUMNS
from tests.results.samples import sha

CONTEXT = ImportContext(vendors={"h200": "nvidia", "mi355x": "amd"})


def agg_row(**overrides: Any) -> dict[str, Any]:
    """A single-node row as InferenceX's process_result.py writes it (seconds, tok/s/GPU)."""
    row: dict[str, Any] = {
        "hw": "h200",
        "conc": 64,
        "image": "vllm/vllm-openai:v0.11.0",
        "model": "deepseek-ai/DeepSeek-R1-0528",
        "infmax_model_prefix": "dsr1",
        "framework": "vllm",
        "precision": "fp8",
        "spec_decoding": "none",
        "disagg": False,
        "isl": 1024,
        "osl": 1024,
        "is_multinode": False,
        "tp": 8,
        "ep": 1,
        "dp_attention": "false",
        "tput_per_gpu": 1500.0,
        "output_tput_per_gpu": 750.0,
        "input_tput_per_gpu": 750.0,
    }
    for metric, base in (("ttft", 0.5), ("tpot", 0.02), ("itl", 0.019), ("e2el", 21.0)):
        for i, stat in enumerate(("mean", "median", "p90", "p99")):
            row[f"{stat}_{metric}"] = base * (1 + i / 4)
    for stat in ("mean", "median", "p90", "p99"):
        row[f"{stat}_intvty"] = 1.0 / row[f"{stat}_tpot"]
    row.update(overrides)
    return row


def _import(row: dict[str, Any]):  # type: ignore[no-untyped-def]
    return IMPORTERS["inferencex"].to_record(row, artifact_sha256=sha("agg"), context=CONTEXT)


def test_agg_row_maps_to_record() -> None:
    rec = _import(agg_row(image="vllm#vllm-openai:v0.11.0", hw="mi355x-amds", dp_attention="true"))
    assert (rec.sku, rec.vendor, rec.model_family, rec.gpus, rec.dp_attn) == (
        "mi355x",
        "amd",
        "dsr1",
        8,
        True,
    )
    assert rec.image == "vllm/vllm-openai:v0.11.0" and rec.image_tag == "v0.11.0"
    assert rec.tput_per_gpu == 1500.0 and rec.ttft_p99_s == pytest.approx(0.5 * 1.75)
    assert rec.intvty_mean == pytest.approx(50.0)
    assert (rec.source, rec.official, rec.simulated, rec.status) == (
        "inferencex",
        True,
        False,
        "ok",
    )
    assert rec.recipe_id == "dsr1-fp8-mi355x-vllm"
    assert rec.request_throughput is None and rec.num_requests is None


def test_old_rows_without_input_throughput_derive_it() -> None:
    row = agg_row()
    del row["input_tput_per_gpu"]
    assert _import(row).input_tput_per_gpu == 750.0


def test_a_tpot_of_zero_is_no_sample() -> None:
    rec = _import(agg_row(median_tpot=0.0, median_intvty=None))
    assert rec.tpot_median_s is None and rec.intvty_median is None
    assert rec.tpot_mean_s == pytest.approx(0.02) and rec.intvty_mean == pytest.approx(50.0)


def test_detected_by_keys() -> None:
    assert importer_for(agg_row(), None).kind == "inferencex"


@pytest.mark.parametrize(
    ("overrides", "code", "message"),
    [
        ({"is_multinode": True}, "unsupported", "only single-node rows"),
        (
            {"mean_tpot": 20.0},
            "wrong-units",
            r"mean_intvty: got 50, but 1 / mean_tpot \(s\) gives 0.05",
        ),
        (
            {"mean_ttft": 500.0, "mean_intvty": 50.0},
            "wrong-units",
            "mean_ttft=500 exceeds mean_e2el=21",
        ),
        ({"tput_per_gpu": 15.0}, "wrong-units", "input \\+ output tput_per_gpu"),
        ({"output_tput_per_gpu": -1.0}, "negative", "output_tput_per_gpu: got -1.0"),
        ({"mean_ttft": float("nan")}, "not-finite", "mean_ttft: got nan"),
        ({"tp": None}, "missing-keys", "missing required keys: tp"),
        ({"image": None}, "missing-identity", "identity lacks image; pass --image"),
        ({"hw": "rtx6000pro-lat"}, "missing-identity", "identity lacks vendor; pass --vendor"),
    ],
)
def test_bad_rows_are_rejected(overrides: dict[str, Any], code: str, message: str) -> None:
    with pytest.raises(MalformedArtifactError, match=message) as info:
        _import(agg_row(**overrides))
    assert info.value.code == code


def test_agg_to_record_to_export_is_the_same_row() -> None:
    row = agg_row()
    rec = _import(row)
    frame = pd.DataFrame([rec.model_dump()], columns=list(RECORD_COLUMNS))
    [exported] = inferencex_rows(frame)
    assert exported == pytest.approx(row)
    assert set(exported) == set(row)


def test_export_skips_null_statistics_and_agentic_rows() -> None:
    rec = _import(agg_row(p90_ttft=None))
    agentic = rec.model_copy(update={"scenario": "agentic-coding", "result_id": "0" * 64})
    frame = pd.DataFrame([rec.model_dump(), agentic.model_dump()], columns=list(RECORD_COLUMNS))
    rows = inferencex_rows(frame)
    assert len(rows) == 1 and "p90_ttft" not in rows[0]
