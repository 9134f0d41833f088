"""`inferx results` through click's CliRunner: ingest, export formats, quarantine, errors."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from click.testing import CliRunner

from inferx_pipeline.cli import cli
from tests.results.importers.test_inferencex import agg_row
from tests.results.samples import vllm_payload

FLAGS = ["--sku", "h200", "--precision", "fp8", "--framework", "vllm", "--tp", "8"]
FLAGS += ["--image", "vllm/vllm-openai:v0.11.0", "--isl", "1024", "--osl", "512"]


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def _files(tmp_path: Path) -> tuple[Path, Path, str]:
    good = tmp_path / "vllm.json"
    good.write_text(json.dumps(vllm_payload()))
    bad = tmp_path / "broken.json"
    bad.write_text('{"model_id": ')
    return good, bad, f"sqlite:///{tmp_path / 'r.sqlite'}"


def test_ingest_reports_written_and_quarantined(tmp_path: Path) -> None:
    good, bad, db = _files(tmp_path)
    code, out = _invoke("results", "ingest", str(good), str(bad), "--database-url", db, *FLAGS)
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0] == "ingested 1 results (0 already stored), quarantined 1"
    assert lines[1].startswith(f"  {bad}: truncated-json: not complete JSON: Expecting value")
    code, out = _invoke("results", "ingest", str(good), "--database-url", db, *FLAGS)
    assert out.splitlines()[0] == "ingested 0 results (1 already stored), quarantined 0"


def test_ingest_strict_exits_1_when_anything_is_quarantined(tmp_path: Path) -> None:
    _, bad, db = _files(tmp_path)
    code, _ = _invoke("results", "ingest", str(bad), "--database-url", db, "--strict")
    assert code == 1


def test_export_formats_and_filters(tmp_path: Path) -> None:
    good, _, db = _files(tmp_path)
    _invoke("results", "ingest", str(good), "--database-url", db, *FLAGS)
    code, out = _invoke("results", "export", "--format", "csv", "--database-url", db)
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 1 and rows[0]["sku"] == "h200" and rows[0]["tput_per_gpu"] == "1920.0"
    code, out = _invoke(
        "results", "export", "--format", "json", "--sku", "b200", "--database-url", db
    )
    assert json.loads(out) == []
    target = tmp_path / "agg.json"
    code, out = _invoke(
        "results", "export", "--format", "inferencex", "-o", str(target), "--database-url", db
    )
    assert out.strip() == f"wrote 1 results to {target}"
    [row] = json.loads(target.read_text())
    assert (row["hw"], row["tp"], row["tput_per_gpu"], row["mean_intvty"]) == (
        "h200",
        8,
        1920.0,
        50.0,
    )


def test_inferencex_collection_round_trips_through_the_cli(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'r.sqlite'}"
    source = tmp_path / "agg_bmk.json"
    source.write_text(json.dumps([agg_row(conc=4), agg_row(conc=8)]))
    code, out = _invoke("results", "ingest", str(source), "--database-url", db)
    assert out.splitlines()[0] == "ingested 2 results (0 already stored), quarantined 0", out
    code, out = _invoke("results", "export", "--format", "inferencex", "--database-url", db)
    assert code == 0
    assert sorted(r["conc"] for r in json.loads(out)) == [4, 8]


def test_quarantine_lists_code_path_reason(tmp_path: Path) -> None:
    _, bad, db = _files(tmp_path)
    _invoke("results", "ingest", str(bad), "--database-url", db)
    code, out = _invoke("results", "quarantine", "--database-url", db)
    assert code == 0
    first, last = out.splitlines()[0], out.splitlines()[-1]
    assert first.startswith(f"truncated-json\t{bad}\tnot complete JSON")
    assert last == "1 quarantined"


def test_unreachable_database_is_one_error_line(tmp_path: Path) -> None:
    code, out = _invoke(
        "results", "quarantine", "--database-url", "postgresql+psycopg2://u@127.0.0.1:1/x"
    )
    assert code == 1
    assert out.startswith("Error: postgresql+psycopg2://u@127.0.0.1:1/x: cannot open or migrate:")


def test_unknown_source_is_a_usage_error(tmp_path: Path) -> None:
    good, _, _ = _files(tmp_path)
    code, out = _invoke("results", "ingest", str(good), "--source", "csv")
    assert code == 2
    assert (
        "Error: Invalid value for '--source': 'csv' is not one of "
        "'inferx', 'inferencex', 'vllm-bench'." in out
    )
