"""`inferx sweep`: the four seed recipes end to end on the simulator, one RawResult per job."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from inferx_pipeline.bench.result import RawResult
from inferx_pipeline.cli import cli
from inferx_pipeline.sweep.artifacts import RESULT, ArtifactStore

SEEDS = (
    "qwen3.827b-bf16-mi325x-vllm-mtp",
    "qwen3.5-fp8-mi300x-sglang-agentic-mtp",
    "qwen3.827b-fp8-h200-vllm-mtp",
    "minimaxm3-fp8-mi325x-vllm-agentic-mtp",
)
FAST_FLAGS = ("--num-prompts", "1", "--max-turns", "1", "--think-time-scale", "0",
              "--time-scale", "0.001", "--load-time-s", "0")  # fmt: skip


def _sweep(artifacts: Path, *flags: str) -> tuple[int, str]:
    args = ["sweep", "--launcher", "sim", "--artifacts-dir", str(artifacts), *FAST_FLAGS, *flags]
    result = CliRunner().invoke(cli, args, env={"COLUMNS": "200"})
    return result.exit_code, result.output


def test_four_seed_recipes_run_on_the_simulator(tmp_path: Path) -> None:
    selection = [arg for seed in SEEDS for arg in ("--recipe", seed)]
    code, output = _sweep(tmp_path / "art", *selection)
    assert code == 0, output
    assert output.rstrip().endswith("48 jobs: 48 ok")
    store = ArtifactStore(tmp_path / "art")
    manifests = list(store.all_attempts())
    assert len(manifests) == 48 and {m.status for m in manifests} == {"ok"}
    results = [RawResult.model_validate_json(store.read(m.artifacts[RESULT])) for m in manifests]
    assert {r.metadata["recipe_id"] for r in results} == set(SEEDS)
    assert len({(r.metadata["fingerprint"], r.max_concurrency) for r in results}) == 48


def test_rerun_reuses_and_failure_exits_one(tmp_path: Path) -> None:
    seed = ("--recipe", SEEDS[0])
    assert _sweep(tmp_path / "art", *seed)[0] == 0
    code, output = _sweep(tmp_path / "art", *seed)
    assert code == 0 and output.rstrip().endswith("8 jobs: 8 reused")
    code, output = _sweep(tmp_path / "other", *seed, "--point-deadline-s", "0.000001")
    assert code == 1 and output.rstrip().endswith("8 jobs: 8 result-invalid")


def test_unknown_launcher_is_a_usage_error(tmp_path: Path) -> None:
    code, output = _sweep(tmp_path, "--launcher", "k8s")
    assert code == 2
    assert "Invalid value for '--launcher': 'k8s' is not one of 'sim', 'docker'." in output
