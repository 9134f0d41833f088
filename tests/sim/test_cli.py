"""``inferx sim``: predict and calibrate through CliRunner, serve as a real subprocess."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import get_args

import pytest
from click.testing import CliRunner

from inferx_pipeline.cli import cli
from inferx_pipeline.recipes.schema import SpecMethod
from inferx_pipeline.sim.calibrate import MeasuredRow
from inferx_pipeline.sim.config import SPEC_METHODS

QWEN = ["--sku", "h100", "--model-family", "qwen3.8-27b"]
READY_TIMEOUT_S = 30.0


def test_predict_prints_one_row_per_concurrency() -> None:
    args = ["sim", "predict", *QWEN, "--isl", "128", "--osl", "32", "--concurrency", "1,4"]
    result = CliRunner().invoke(cli, [*args, "--prompts-per-conc", "2"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == [
        "conc",
        "tok/s/GPU",
        "tok/s/user",
        "TTFT",
        "ms",
        "TPOT",
        "ms",
        "E2EL",
        "s",
    ]
    assert [line.split()[0] for line in lines[1:]] == ["1", "4"]


def test_predict_json_lines() -> None:
    args = ["sim", "predict", *QWEN, "--isl", "64", "--osl", "16", "--concurrency", "2", "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    point = json.loads(result.output)
    assert point["concurrency"] == 2 and point["output_tput_per_gpu"] > 0


def test_every_shipped_recipe_predicts_on_the_simulator() -> None:
    """Each recipe's method is one the simulator models (n-gram, with no draft weights,
    once crashed ``--recipe`` with a traceback)."""
    assert set(SPEC_METHODS) == set(get_args(SpecMethod))
    for recipe in ("tiny-qwen3-bf16-cpu-vllm-ngram", "tiny-mimo-bf16-cpu-vllm-mtp"):
        result = CliRunner().invoke(cli, ["sim", "predict", "--recipe", recipe])
        assert result.exit_code == 0, result.output
        assert [line.split()[0] for line in result.output.strip().splitlines()[-2:]] == ["1", "4"]


def test_unknown_sku_is_one_error_line() -> None:
    args = ["sim", "predict", "--sku", "x100", "--model-family", "qwen3.8-27b"]
    result = CliRunner().invoke(cli, [*args, "--isl", "8", "--osl", "8"])
    assert result.exit_code == 1
    assert result.output.splitlines()[-1].startswith(
        "Error: unknown SKU 'x100'; catalog/skus.yaml has: b200, b300, cpu, gb200"
    )


def test_incomplete_speculation_is_a_usage_error() -> None:
    args = ["sim", "predict", *QWEN, "--isl", "8", "--osl", "8", "--spec-method", "mtp"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (
        "Error: --options: Value error, spec_method mtp needs --num-speculative-tokens >= 1 "
        "and --acceptance-length"
    )


def test_calibrate_prints_profiles_yaml(tmp_path: Path) -> None:
    row = MeasuredRow(
        engine="vllm", sku="h100", model_family="qwen3.8-27b", concurrency=1, isl=128,
        osl=32, tput_per_gpu=40.0, tpot_ms=25.0,
    )  # fmt: skip
    rows = tmp_path / "rows.jsonl"
    rows.write_text(row.model_dump_json() + "\n")
    result = CliRunner().invoke(cli, ["sim", "calibrate", str(rows)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("profiles:\n- engine: vllm\n  sku: h100\n")
    assert "calibrated: true" in result.output


def _serve(*extra: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "inferx_pipeline", "sim", "serve", *QWEN, "--port", "0"]
    return subprocess.Popen(
        [*argv, "--load-time-s", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def server_process() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()


def _listening_url(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    line = process.stdout.readline()  # the server prints it once bound, then flushes
    prefix = "INFERX_SIM_LISTENING "
    assert line.startswith(prefix), line
    return line[len(prefix) :].strip()


def _get_status(url: str) -> int:
    deadline = time.perf_counter() + READY_TIMEOUT_S
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                return int(resp.status)
        except ConnectionError:
            if time.perf_counter() > deadline:
                raise


def test_serve_announces_its_port_and_stops_on_sigterm(
    server_process: list[subprocess.Popen[str]],
) -> None:
    process = _serve()
    server_process.append(process)
    url = _listening_url(process)
    assert url.startswith("http://127.0.0.1:")
    assert _get_status(url + "/health") == 200
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=10) == 0


def test_crashing_engine_exits_non_zero(server_process: list[subprocess.Popen[str]]) -> None:
    process = _serve("--crash-after-tokens", "3", "--time-scale", "0.05")
    server_process.append(process)
    url = _listening_url(process)
    body = json.dumps({"prompt": "t1 t2", "max_tokens": 10}).encode()
    request = urllib.request.Request(
        url + "/v1/completions", data=body, headers={"Content-Type": "application/json"}
    )
    with pytest.raises(ConnectionError):
        urllib.request.urlopen(request, timeout=10)
    assert process.wait(timeout=10) == 1
    assert process.stderr is not None
    assert process.stderr.read().strip().splitlines()[-1] == (
        "Error: simulated engine crashed after 3 generated tokens (--crash-after-tokens)"
    )


# A meta-path finder that refuses the named top-level packages, as the simulator image
# lacks them; then `inferx sim serve --help` imports the whole command module.
_WITHOUT_PACKAGES = """
import runpy, sys
blocked = set(sys.argv[1].split(","))
class Missing:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Missing())
sys.argv = ["inferx", "sim", "serve", "--help"]
runpy.run_module("inferx_pipeline", run_name="__main__")
"""


def _closure(dists: Iterable[str]) -> set[str]:
    """The distributions pip installs for ``dists`` (markers evaluated, no extras)."""
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    todo = [canonicalize_name(d) for d in dists]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            reqs = [Requirement(r) for r in requires(name) or []]
        except PackageNotFoundError:  # a marker-excluded platform dependency
            continue
        todo += [
            canonicalize_name(r.name)
            for r in reqs
            if r.marker is None or r.marker.evaluate({"extra": ""})
        ]
    return seen


def test_sim_serve_imports_only_what_the_simulator_image_installs() -> None:
    from importlib.metadata import packages_distributions

    from packaging.utils import canonicalize_name

    from tests.services.engine_images import SIM_RUNTIME_DISTS

    image = _closure(SIM_RUNTIME_DISTS) | {"inferx-pipeline"}
    blocked = sorted(
        module
        for module, dists in packages_distributions().items()
        if not any(canonicalize_name(d) in image for d in dists)
    )
    assert {"docker", "dagster", "pandas"} <= set(blocked), blocked
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_PACKAGES, ",".join(blocked)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "--time-scale" in done.stdout
