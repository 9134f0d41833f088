"""``inferx bench``: flags to a config, summary, result file, exit codes and error lines."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from inferx_pipeline.bench.prometheus import scrape
from inferx_pipeline.cli import cli
from tests.bench.conftest import SIM_MODEL, SimProcess
from tests.bench.server import TestServer, refused_url
from tests.smoke import smoke_catalog

READY_TIMEOUT_S = 60.0


@pytest.fixture(autouse=True)
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project root whose validity rules need no minimum duration (CLI default: 0 s)."""
    smoke_catalog(tmp_path / "root")
    monkeypatch.setenv("INFERX_ROOT", str(tmp_path / "root"))
    return tmp_path / "root"


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


def test_endpoint_as_the_argument(server: TestServer, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    got = _run(server.url, "--num-prompts", "1", "--result", str(out))
    assert got.exit_code == 0, got.output
    assert json.loads(out.read_text())["endpoint"] == server.url


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("http://x", "--endpoint", "http://y"),
         "Error: got the endpoint twice (http://x and --endpoint http://y); give one of them"),
        ((), "Error: Missing the endpoint: give it as the ENDPOINT argument or --endpoint"),
    ],
)  # fmt: skip
def test_endpoint_given_twice_or_not_at_all_is_a_usage_error(
    args: tuple[str, ...], line: str
) -> None:
    got = _run(*args)
    assert got.exit_code == 2
    assert got.output.splitlines()[-1] == line


def test_minimum_duration_defaults_to_the_catalog_rule(
    server: TestServer, root: Path, tmp_path: Path
) -> None:
    validity = root / "catalog" / "bench-validity.yaml"
    rules = yaml.safe_load(validity.read_text())
    validity.write_text(yaml.safe_dump(rules | {"min_duration_s": 0.2}))
    out = tmp_path / "r.json"
    got = _run(server.url, "--num-prompts", "1", "--result", str(out))
    assert got.exit_code == 0, got.output
    data = json.loads(out.read_text())
    assert (data["min_duration_s"], data["dataset"]["num_prompts"]) == (0.2, 1)
    assert data["num_prompts"] > 1 and data["duration"] >= 0.2
    got = _run(server.url, "--num-prompts", "1", "--min-duration-s", "0", "--result", str(out))
    assert got.exit_code == 0, got.output
    assert json.loads(out.read_text())["num_prompts"] == 1


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


def _wait_for_finished_requests(url: str, process: subprocess.Popen[str]) -> None:
    # Readiness, not timing: the client has measured something once the server finished one.
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not scrape(url).get("vllm:e2e_request_latency_seconds_count"):
        assert process.poll() is None, "inferx bench exited before measuring"
        assert time.monotonic() < deadline, "no tokens streamed within the readiness deadline"
        time.sleep(0.05)


def test_ctrl_c_writes_what_was_measured_marked_incomplete(
    sim_process: SimProcess, tmp_path: Path
) -> None:
    out = tmp_path / "r.json"
    argv = [sys.executable, "-m", "inferx_pipeline", "bench", "--endpoint", sim_process.url,
            "--model", SIM_MODEL, "--input-len", "16", "--output-len", "32",
            "--concurrency", "2", "--num-prompts", "2000", "--result", str(out)]  # fmt: skip
    bench = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_finished_requests(sim_process.url, bench)
        bench.send_signal(signal.SIGINT)
        _, stderr = bench.communicate(timeout=60)
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait(timeout=10)
    assert bench.returncode == 130, stderr
    assert stderr.splitlines()[-1] == f"interrupted: incomplete result; result written to {out}"
    data = json.loads(out.read_text())
    assert (data["status"], data["stop_reason"], data["valid"]) == (
        "incomplete",
        "interrupted",
        False,
    )
    assert 0 < data["completed"] + data["failed"] < 2000
