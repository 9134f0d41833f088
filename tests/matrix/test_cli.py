"""inferx matrix / import-inferencex: formats, selection flags and the exact error lines."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from click.testing import CliRunner

from inferx_pipeline.cli import cli


def test_bad_changed_range_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["matrix", "--changed", "main"])
    assert result.exit_code == 2
    assert "Invalid value for '--changed': got 'main'; expected BASE..HEAD" in result.output


def test_csv_and_new_vs(tmp_path: Path) -> None:
    runner = CliRunner()
    first = runner.invoke(cli, ["matrix", "--format", "json", "--recipe", "qwen3.827b-*"])
    assert first.exit_code == 0, first.output
    previous = tmp_path / "old.json"
    previous.write_text(first.output)
    again = runner.invoke(cli, ["matrix", "--format", "csv", "--new-vs", str(previous)])
    assert again.exit_code == 0, again.output
    rows = list(csv.DictReader(io.StringIO(again.output)))
    assert rows and not any(r["recipe"].startswith("qwen3.827b-") for r in rows)
    assert {"job_id", "fingerprint", "server_command"} <= set(rows[0])


def test_missing_previous_list_is_one_error_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["matrix", "--new-vs", str(tmp_path / "none.json")])
    assert result.exit_code == 2
    assert result.output.startswith(
        f"Error: {tmp_path / 'none.json'}: cannot read a previous job list"
    )


def test_import_requires_out() -> None:
    result = CliRunner().invoke(cli, ["import-inferencex", __file__])
    assert result.exit_code == 2
    assert "Missing option '--out'" in result.output


def test_json_lists_jobs_with_commands() -> None:
    result = CliRunner().invoke(cli, ["matrix", "--format", "json", "--framework", "sglang"])
    assert result.exit_code == 0, result.output
    jobs = json.loads(result.output)
    assert jobs and all(j["engine"]["framework"] == "sglang" for j in jobs)
    assert all(j["server_command"].startswith("python3 -m sglang.launch_server") for j in jobs)


def test_conc_keeps_those_concurrencies_and_refuses_a_bad_list() -> None:
    runner = CliRunner()
    args = ["matrix", "--format", "json", "--recipe", "qwen3.827b-fp8-h200-vllm-mtp"]
    result = runner.invoke(cli, [*args, "--conc", "1,8", "--conc", "128"])
    assert result.exit_code == 0, result.output
    assert sorted(job["conc"] for job in json.loads(result.output)) == [1, 8, 128]
    for bad in ("1,x", "0", ","):
        result = runner.invoke(cli, [*args, "--conc", bad])
        assert result.exit_code == 2, result.output
        assert "Invalid value for '--conc'" in result.output, result.output
