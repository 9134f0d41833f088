"""ingest: files and dirs into the store; malformed inputs quarantined, good files kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferx_pipeline.results.importers import IdentityHints, ImportContext
from inferx_pipeline.results.ingest import collect_files, ingest
from inferx_pipeline.results.store import ResultStore
from tests.results.samples import raw_result_payload, vllm_payload

METADATA = {
    "recipe_id": "dsr1-fp8-h200-vllm",
    "fingerprint": "f" * 64,
    "job_id": "dsr1-fp8-h200-vllm/c16",
    "model_family": "dsr1",
    "precision": "fp8",
    "sku": "h200",
    "vendor": "nvidia",
    "framework": "vllm",
    "image": "vllm/vllm-openai:v0.11.0",
    "tp": 8,
    "run_id": "run-7",
    "simulated": True,
}
CONTEXT = ImportContext(
    vendors={"h200": "nvidia"}, families={"deepseek-ai/DeepSeek-R1-0528": "dsr1"}
)


def _good(conc: int) -> str:
    return json.dumps(raw_result_payload(max_concurrency=conc, metadata=METADATA))


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


MALFORMED = {
    "truncated.json": (_good(1)[:200], "truncated-json"),
    "missing.json": (
        json.dumps(
            {k: v for k, v in raw_result_payload(metadata=METADATA).items() if k != "duration"}
        ),
        "missing-keys",
    ),
    "nan.json": (_good(2).replace('"mean_ttft_ms": 200.0', '"mean_ttft_ms": NaN'), "not-finite"),
    "negative.json": (
        json.dumps(raw_result_payload(output_throughput=-1.0, metadata=METADATA)),
        "negative",
    ),
    "units.json": (
        json.dumps(raw_result_payload(duration=10_000.0, metadata=METADATA)),
        "wrong-units",
    ),
    "scalar.json": ("[1]", "not-an-object"),
    "unknown.json": (json.dumps({"hello": "world"}), "unknown-format"),
    "noidentity.json": (
        json.dumps(raw_result_payload(metadata={"run_id": "x"})),
        "missing-identity",
    ),
}


def test_malformed_files_are_quarantined_and_good_files_still_ingest(
    tmp_path: Path, store: ResultStore
) -> None:
    for name, (text, _) in MALFORMED.items():
        _write(tmp_path / "bad", name, text)
    for conc in (4, 8):
        _write(tmp_path / "good", f"c{conc}.json", _good(conc))
    _write(tmp_path / "good" / "copy", "c4.json", _good(4))  # same bytes again
    report = ingest([tmp_path], store, CONTEXT)
    assert report.written == 2
    codes = {
        Path(r.path.split("#")[0]).name: r.code
        for r in report.rejections
        if r.code != "duplicate-artifact"
    }
    assert codes == {name: code for name, (_, code) in MALFORMED.items()}
    assert [r.code for r in report.rejections].count("duplicate-artifact") == 1
    assert sorted(store.read_frame()["conc"]) == [4, 8]
    stored = {r.code for r in store.quarantine()}
    assert stored >= {code for _, code in MALFORMED.values()}


def test_double_ingest_is_one_row(tmp_path: Path, store: ResultStore) -> None:
    path = _write(tmp_path, "c4.json", _good(4))
    first = ingest([path], store, CONTEXT)
    second = ingest([path], store, CONTEXT)
    assert (first.written, second.written, second.skipped_existing) == (1, 0, 1)
    assert store.count() == 1
    assert store.quarantine() == []


def test_identity_flags_complete_a_file_and_win_over_it(tmp_path: Path) -> None:
    store = ResultStore(f"sqlite:///{tmp_path / 'r.sqlite'}")
    path = _write(tmp_path, "raw.json", json.dumps(raw_result_payload(metadata={"sku": "b200"})))
    first = ingest([path], store, CONTEXT)
    assert [r.code for r in first.rejections] == ["missing-identity"]
    assert "pass --precision, --sku" not in first.rejections[0].reason
    assert "--precision" in first.rejections[0].reason and "--tp" in first.rejections[0].reason
    hints = IdentityHints(
        identity={
            "sku": "h200",
            "precision": "fp8",
            "framework": "vllm",
            "image": "vllm/vllm-openai:v1",
            "tp": 8,
        }
    )
    context = CONTEXT.model_copy(update={"hints": hints})
    second = ingest([path], store, context)
    assert second.written == 1
    row = store.read_frame().iloc[0]
    assert (row["sku"], row["vendor"], row["model_family"], row["recipe_id"]) == (
        "h200",
        "nvidia",
        "dsr1",
        "dsr1-fp8-h200-vllm",
    )
    assert store.quarantine() == []  # released once stored


def test_collect_files_recurses_directories_in_sorted_order(tmp_path: Path) -> None:
    b = _write(tmp_path / "d", "b.json", "{}")
    a = _write(tmp_path / "d" / "sub", "a.json", "{}")
    _write(tmp_path / "d", "notes.txt", "")
    explicit = _write(tmp_path, "x.txt", "{}")
    assert collect_files([tmp_path / "d", explicit]) == [b, a, explicit]


def test_unreadable_path_is_quarantined(tmp_path: Path, store: ResultStore) -> None:
    report = ingest([tmp_path / "gone.json"], store, CONTEXT)
    assert [r.code for r in report.rejections] == ["unreadable"]


@pytest.mark.parametrize("source", ["vllm-bench", None])
def test_explicit_or_detected_source(
    tmp_path: Path, store: ResultStore, source: str | None
) -> None:
    path = _write(tmp_path, "vllm.json", json.dumps(vllm_payload()))
    hints = IdentityHints(
        identity={
            "sku": "h200",
            "precision": "fp8",
            "framework": "vllm",
            "image": "vllm/vllm-openai:v1",
            "tp": 8,
        }
    )
    report = ingest([path], store, CONTEXT.model_copy(update={"hints": hints}), source)  # type: ignore[arg-type]
    assert report.written == 1
    assert store.read_frame()["source"].tolist() == ["vllm-bench"]
