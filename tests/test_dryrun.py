"""`inferx sim predict --recipe`: a seed recipe's server groups predicted before GPUs exist."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from inferx_pipeline.bench.trace import TraceSession, TraceTurn
from inferx_pipeline.cli import cli
from inferx_pipeline.dryrun import mean_turn

FIXED_SEED = "qwen3.827b-fp8-h200-vllm-mtp"  # one group, 1k/1k, conc 1..128
AGENTIC_SEED = "qwen3.5-fp8-mi300x-sglang-agentic-mtp"  # two groups


def _predict(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["sim", "predict", *args])
    return result.exit_code, result.output


def test_fixed_seed_prints_one_rising_line_per_concurrency() -> None:
    code, output = _predict("--recipe", FIXED_SEED, "--prompts-per-conc", "2")
    assert code == 0, output
    lines = output.strip().splitlines()
    assert lines[0] == (
        f"{FIXED_SEED}/fixed-seq-len-1024x1024/tp1-mtp · h200 · 1 GPU · ISL 1024 OSL 1024"
    )
    rows = [line.split() for line in lines[2:]]
    assert [int(row[0]) for row in rows] == [1, 2, 4, 8, 16, 32, 64, 128]
    tput = [float(row[1]) for row in rows]
    per_user = [float(row[2]) for row in rows]
    assert min(tput) > 0 and min(per_user) > 0
    assert tput == sorted(tput), "throughput rises with concurrency up to saturation"
    assert tput[-1] < 1.1 * tput[-2], "and saturates at the top"
    assert per_user[0] > per_user[-1]


def test_agentic_seed_is_predicted_per_group_and_marked_approximate() -> None:
    code, output = _predict("--recipe", AGENTIC_SEED, "--prompts-per-conc", "1", "--json")
    assert code == 0, output
    points = [json.loads(line) for line in output.splitlines()]
    groups = {point["group"] for point in points}
    assert groups == {
        f"{AGENTIC_SEED}/agentic-coding/tp8-mtp",
        f"{AGENTIC_SEED}/agentic-coding/tp8-mtp-kvdram-hicache",
    }
    assert all(p["approximate"] and p["gpus"] == 8 and p["sku"] == "mi300x" for p in points)
    assert [p["concurrency"] for p in points] == [1, 4, 8, 12, 16, 4, 8, 12, 16]


def test_concurrency_overrides_the_recipe_levels() -> None:
    code, output = _predict("--recipe", FIXED_SEED, "--concurrency", "3,1", "--json")
    assert code == 0, output
    assert [json.loads(line)["concurrency"] for line in output.splitlines()] == [1, 3]


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("--recipe", FIXED_SEED, "--tp", "2"),
         "Error: --tp: set by the recipe's jobs; drop it or drop --recipe"),
        (("--recipe", "no-such-recipe"),
         "Error: --recipe no-such-recipe: no jobs in "),
        (("recipes/",), "Error: recipe PATHS need --recipe ID"),
        (("--model-family", "qwen3.8-27b", "--isl", "8", "--osl", "8"),
         "Error: Missing option '--sku'."),
        (("--sku", "h200", "--model-family", "qwen3.8-27b", "--osl", "8"),
         "Error: Missing option '--isl' (or give --recipe)."),
    ],
)  # fmt: skip
def test_usage_errors(args: tuple[str, ...], error: str) -> None:
    code, output = _predict(*args)
    assert code == 2
    assert output.splitlines()[-1].startswith(error)


def test_mean_turn_counts_the_growing_context() -> None:
    turns = [TraceTurn(input_len=10, output_len=4), TraceTurn(input_len=6, output_len=2)]
    session = TraceSession(session_id="s", prefix_id="p", prefix_len=100, turns=turns)
    # prompts: 100 + 10 = 110, then 110 + 4 + 6 = 120; outputs 4 and 2.
    assert mean_turn([session]) == (115, 3)
