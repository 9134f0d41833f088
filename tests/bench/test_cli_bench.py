"""``inferx bench``: flags to a config, summary, result file, exit codes and error lines."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from inferx_pipeline.cli import cli
from tests.bench.server import TestServer, refused_url


def _run(*args: str) -> Result:
    return CliRunner().invoke(cli, ["bench", "--model", "m", *args])


def test_writes_result_and_prints_summary(server: TestServer, tmp_path: Path) -> None:
    out = tmp_path / "r" / "result.json"
    got = _run(
        "--endpoint", server.url, "--input-len", "8", "--output-len", "4",
        "--concurrency", "2", "--prompts-per-conc", "3", "--seed", "5",
        "--metadata", "fingerprint=abc", "--metadata", "simulated=true",
        "--api", "chat", "--chat-template-kwargs", '{"enable_thinking": false}',
        "--result", str(out),
    )  # fmt: skip
    assert got.exit_code == 0, got.output
    data = json.loads(out.read_text())
    assert (data["completed"], data["num_prompts"], data["seed"]) == (6, 6, 5)
    assert data["metadata"] == {"fingerprint": "abc", "simulated": True}
    assert server.counters.bodies[0]["chat_template_kwargs"] == {"enable_thinking": False}
    assert "completed / failed" in got.output


def test_all_requests_failing_exits_1_with_the_first_error(tmp_path: Path) -> None:
    url = refused_url()
    out = tmp_path / "r.json"
    got = _run("--endpoint", url, "--num-prompts", "2", "--result", str(out))
    assert got.exit_code == 1
    last = got.output.strip().splitlines()[-1]
    assert last.startswith(f"Error: all 2 requests failed; first: cannot connect to {url}")
    assert last.endswith(f"; result written to {out}")
    assert json.loads(out.read_text())["status"] == "failed"


def test_flag_of_another_dataset_is_a_usage_error() -> None:
    got = _run("--endpoint", "http://x", "--prefix-len", "5")
    assert got.exit_code == 2
    assert got.output.splitlines()[-1] == "Error: --prefix-len does not apply to --dataset random"
    got = _run("--endpoint", "http://x", "--concurrency", "0")
    assert got.output.splitlines()[-1] == (
        "Error: --concurrency: Input should be greater than or equal to 1"
    )


def test_bad_metadata_and_kwargs_are_usage_errors() -> None:
    got = _run("--endpoint", "http://x", "--metadata", "novalue")
    assert got.exit_code == 2
    assert "Invalid value for --metadata: got 'novalue'; expected KEY=VALUE" in got.output
    got = _run("--endpoint", "http://x", "--chat-template-kwargs", "[1]")
    assert "Invalid value for --chat-template-kwargs: expected a JSON object" in got.output


def test_agentic_dataset_from_the_cli(server: TestServer, tmp_path: Path) -> None:
    out = tmp_path / "a.json"
    got = _run(
        "--endpoint", server.url, "--dataset", "agentic", "--think-time-scale", "0",
        "--max-turns", "2", "--num-prompts", "3", "--concurrency", "3", "--result", str(out),
    )  # fmt: skip
    assert got.exit_code == 0, got.output
    data = json.loads(out.read_text())
    assert data["agentic"]["sessions"] == 3 and data["agentic"]["turns"] == 6
    assert data["dataset"]["trace"] == "agentic-coding-small"
