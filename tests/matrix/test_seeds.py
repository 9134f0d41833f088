"""The four seed recipes under recipes/ expand to 8, 9, 8 and 23 jobs through inferx matrix."""

from __future__ import annotations

import json
from collections import Counter

from click.testing import CliRunner

from inferx_pipeline.cli import cli

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
    assert "vllm serve MiniMaxAI/MiniMax-M3-MXFP8" in result.output
