"""Golden acceptance-length curves: loading, lookup, precision warnings and file hashes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from inferx_pipeline.errors import GoldenCurveError
from inferx_pipeline.golden import GoldenRegistry, load_golden
from tests.paths import INFERENCEX, ROOT

IMPORTED = INFERENCEX / "golden_al_distribution"


@pytest.fixture(scope="module")
def golden() -> GoldenRegistry:
    return load_golden(ROOT / "golden_al_distribution")


def test_every_inferencex_curve_is_imported_with_its_values(golden: GoldenRegistry) -> None:
    sources = sorted(IMPORTED.glob("*.yaml"))
    assert sources, f"no InferenceX curves under {IMPORTED}"
    shipped = {p.stem for p in (ROOT / "golden_al_distribution").glob("*.yaml")}
    assert {p.stem for p in sources} <= shipped
    assert set(golden.names()) == shipped
    assert "qwen3.8-27b_mtp" in shipped
    for source in sources:
        # InferenceX: {model key: {thinking_on: {K: AL}, thinking_off: {K: AL}}}
        ((model_key, modes),) = yaml.safe_load(source.read_text()).items()
        curve = golden.curve(source.stem)
        assert curve.curve_model == model_key
        assert {"on": curve.thinking_on, "off": curve.thinking_off} == {
            "on": modes.get("thinking_on", {}),
            "off": modes.get("thinking_off", {}),
        }, source.stem


def test_lookup_returns_al_and_provenance(golden: GoldenRegistry) -> None:
    point = golden.lookup("qwen3.5_mtp", "on", 3)
    assert point.al == 3.39
    curve = point.curve
    assert (curve.curve_model, curve.precision, curve.hardware) == (
        "qwen3.5-397b-a17b-nvfp4",
        "nvfp4",
        "b300",
    )
    assert (
        curve.source_run == "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/27317114007"
    )
    assert golden.lookup("qwen3.5_mtp", "off", 3).al == 3.33


def test_qwen38_curve_is_the_seed_measurement(golden: GoldenRegistry) -> None:
    point = golden.lookup("qwen3.8-27b_mtp", "on", 3)
    assert (point.al, point.curve.precision) == (2.51, "bf16")
    assert "3304" in point.curve.source_run


def test_missing_curve_mode_and_length_are_errors(golden: GoldenRegistry) -> None:
    with pytest.raises(GoldenCurveError, match="golden curve 'nope' not found"):
        golden.lookup("nope", "on", 3)
    with pytest.raises(
        GoldenCurveError, match=r"no thinking off measurements \(measured: thinking on\)"
    ):
        golden.lookup("qwen3.8-27b_mtp", "off", 3)
    with pytest.raises(GoldenCurveError, match="no AL for 9 draft tokens; measured: 1, 2, 3"):
        golden.lookup("qwen3.5_mtp", "on", 9)


def test_precision_warning_names_both(golden: GoldenRegistry) -> None:
    warning = golden.precision_warning("qwen3.5_mtp", "fp8")
    assert warning is not None and "NVFP4" in warning and "FP8" in warning
    assert golden.precision_warning("qwen3.8-27b_mtp", "bf16") is None


def test_file_hash_is_sha256_of_the_bytes(golden: GoldenRegistry) -> None:
    path = ROOT / "golden_al_distribution/qwen3.5_mtp.yaml"
    assert golden.file_hash("qwen3.5_mtp") == hashlib.sha256(path.read_bytes()).hexdigest()


def test_changed_curve_changes_its_hash(tmp_path: Path) -> None:
    src = ROOT / "golden_al_distribution/qwen3.8-27b_mtp.yaml"
    target = tmp_path / "qwen3.8-27b_mtp.yaml"
    target.write_bytes(src.read_bytes())
    before = load_golden(tmp_path).file_hash("qwen3.8-27b_mtp")
    target.write_text(src.read_text().replace("3: 2.51", "3: 2.52"))
    after = load_golden(tmp_path)
    assert after.file_hash("qwen3.8-27b_mtp") != before
    assert after.lookup("qwen3.8-27b_mtp", "on", 3).al == 2.52


def test_invalid_curve_file_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("curve_model: x\nthinking_on: {one: 2}\n")
    with pytest.raises(GoldenCurveError, match=r"bad.yaml: invalid golden curve"):
        load_golden(tmp_path)


def test_provenance_keeps_a_hash_inside_a_value(golden: GoldenRegistry) -> None:
    curve = golden.curve("qwen3.8-27b_mtp")
    assert curve.hardware == "unrecorded (InferenceX #3304)"
    assert curve.dataset == "unrecorded (InferenceX #3304)"


def test_provenance_hash_is_kept_but_numbers_keep_their_comments(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(
        "# a comment line stays a comment\n"
        "curve_model: m #1\nfamily: f\nmethod: mtp\nprecision: bf16\n"
        "hardware: 'quoted' # a comment after a quoted value stays a comment\n"
        "engine: vLLM\nsource_run: https://example.invalid/run#L3\n"
        "dataset: set # of prompts\nthinking_on:\n  3: 2.5  # measured once\n"
    )
    curve = load_golden(tmp_path).curve("c")
    assert (curve.curve_model, curve.hardware, curve.dataset) == (
        "m #1",
        "quoted",
        "set # of prompts",
    )
    assert curve.source_run == "https://example.invalid/run#L3"
    assert curve.thinking_on == {3: 2.5}
