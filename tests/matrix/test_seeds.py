"""Seed recipes through inferx matrix: 8, 9, 8, 23 jobs, no 1k/1k evals, server commands."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from typing import Any

import pytest
from click.testing import CliRunner

from inferx_pipeline.cli import cli
from inferx_pipeline.engines.base import ADAPTERS

SEEDS = {
    "qwen3.827b-bf16-mi325x-vllm-mtp": 8,
    "qwen3.5-fp8-mi300x-sglang-agentic-mtp": 9,
    "qwen3.827b-fp8-h200-vllm-mtp": 8,
    "minimaxm3-fp8-mi325x-vllm-agentic-mtp": 23,
}


def test_seed_job_counts_and_commands() -> None:
    result = CliRunner().invoke(
        cli, ["matrix", "--format", "json", *(f"--recipe={s}" for s in SEEDS)]
    )
    assert result.exit_code == 0, result.output
    jobs = json.loads(result.output)
    assert Counter(j["recipe_id"] for j in jobs) == SEEDS
    qwen = [j for j in jobs if j["recipe_id"] == "qwen3.827b-bf16-mi325x-vllm-mtp"]
    assert {j["spec"]["target_al"] for j in qwen} == {2.51}
    assert all('"synthetic_acceptance_length": 2.51' in j["server_command"] for j in qwen)
    sglang = [j for j in jobs if j["recipe_id"].startswith("qwen3.5-fp8-mi300x")]
    assert {j["server_env"]["SGLANG_SIMULATE_ACC_LEN"] for j in sglang} == {"3.39"}


def test_seed_table_prints_every_job() -> None:
    result = CliRunner().invoke(
        cli, ["matrix", "--recipe", "minimaxm3-fp8-mi325x-vllm-agentic-mtp"]
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("23 jobs\n")
    assert "vllm serve '{model}' --served-model-name MiniMaxAI/MiniMax-M3-MXFP8" in result.output


def test_qwen_bf16_1k1k_policy_selects_no_default_evals() -> None:
    args = ["matrix", "--evals", "--format", "json", "--recipe", "qwen3.827b-bf16-mi325x-vllm-mtp"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    jobs = json.loads(result.output)
    assert [j["conc"] for j in jobs] == [1, 2, 4, 8, 16, 32, 64, 128]
    assert not any(j["run_eval"] for j in jobs)


# What each adapter's server command line contains (a framework without an adapter
# shows "(reason)" in place of its command).
_LAUNCHERS = {
    "vllm": "vllm serve ",
    "sglang": "python3 -m sglang.launch_server ",
    "trt": "trtllm-serve serve ",
    "atom": "python3 -m atom.entrypoints.openai_server ",
}


def _commands(fmt: str, output: str) -> list[str]:
    if fmt == "json":
        return [j["server_command"] for j in json.loads(output)]
    return [row["server_command"] for row in csv.DictReader(io.StringIO(output))]


@pytest.fixture(scope="module")
def listed() -> list[dict[str, Any]]:
    result = CliRunner().invoke(cli, ["matrix", "--format", "json"])
    assert result.exit_code == 0, result.output
    jobs: list[dict[str, Any]] = json.loads(result.output)
    return jobs


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_every_job_carries_its_adapters_command(fmt: str, listed: list[dict[str, Any]]) -> None:
    result = CliRunner().invoke(cli, ["matrix", "--format", fmt])
    assert result.exit_code == 0, result.output
    frameworks = [j["engine"]["framework"] for j in listed]
    assert set(_LAUNCHERS) == set(frameworks) and set(frameworks) <= set(ADAPTERS)
    commands = _commands(fmt, result.output)
    assert len(commands) == len(frameworks) == 76
    assert all(_LAUNCHERS[f] in c for f, c in zip(frameworks, commands, strict=True))


def test_table_prints_a_command_under_every_job(listed: list[dict[str, Any]]) -> None:
    result = CliRunner().invoke(cli, ["matrix"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.startswith("76 jobs\n")
    headers = [
        f"\n{j['job_id']}  sku={j['sku']} conc={j['conc']} fp={j['fingerprint'][:12]}\n"
        for j in listed
    ]
    starts = [out.index(h) for h in headers]  # the table lists jobs in matrix order
    ends = [*starts[1:], len(out)]
    for job, header, start, end in zip(listed, headers, starts, ends, strict=True):
        command = out[start + len(header) : end]
        assert command.startswith("    ") and not command.startswith("    (")
        assert _LAUNCHERS[job["engine"]["framework"]] in command
