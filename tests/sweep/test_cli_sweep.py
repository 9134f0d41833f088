"""`inferx sweep`: the four seed recipes end to end on the simulator, one RawResult per job."""

from __future__ import annotations

import json
from pathlib import Path

import psutil
from click.testing import CliRunner, Result

from inferx_pipeline.bench.result import RawResult
from inferx_pipeline.cli import cli
from inferx_pipeline.sweep.artifacts import RESULT, ArtifactStore
from tests.engines.jobs import recipe_jobs
from tests.sweep.interrupt import assert_cancelled_cleanly, interrupt_after_first_point

SEEDS = (
    "qwen3.827b-bf16-mi325x-vllm-mtp",
    "qwen3.5-fp8-mi300x-sglang-agentic-mtp",
    "qwen3.827b-fp8-h200-vllm-mtp",
    "minimaxm3-fp8-mi325x-vllm-agentic-mtp",
)
FAST_FLAGS = ("--num-prompts", "1", "--max-turns", "1", "--think-time-scale", "0",
              "--time-scale", "0.001", "--load-time-s", "0")  # fmt: skip


def _invoke(artifacts: Path, *flags: str, columns: str | None = "200") -> Result:
    """``inferx sweep`` on the fast simulator; ``columns=None`` unsets COLUMNS."""
    args = ["sweep", "--launcher", "sim", "--artifacts-dir", str(artifacts), *FAST_FLAGS, *flags]
    return CliRunner().invoke(cli, args, env={"COLUMNS": columns})


def _sweep(artifacts: Path, *flags: str) -> tuple[int, str]:
    result = _invoke(artifacts, *flags)
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


def test_off_a_terminal_each_job_is_one_line_of_the_table(tmp_path: Path) -> None:
    result = _invoke(tmp_path / "art", "--recipe", SEEDS[0], columns=None)  # CliRunner: a pipe
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    job_ids = [job.job_id for job in recipe_jobs(SEEDS[0])]
    assert all(len([line for line in lines if f"│ {job_id} " in line]) == 1 for job_id in job_ids)
    assert all(" ok " in line for line in lines if any(job in line for job in job_ids))


def test_format_json_is_one_document_with_every_job(tmp_path: Path) -> None:
    seed = ("--recipe", SEEDS[0], "--format", "json")
    first = _invoke(tmp_path / "art", *seed, columns=None)
    assert first.exit_code == 0, first.output
    summary = json.loads(first.stdout)  # progress went to stderr
    jobs = summary["jobs"]
    assert [job["job_id"] for job in jobs] == [job.job_id for job in recipe_jobs(SEEDS[0])]
    assert summary["counts"] == {"ok": 8} and summary["ok"] is True and summary["notes"] == []
    assert {(job["status"], job["attempt"], job["reused"], job["slurm_job"]) for job in jobs} == {
        ("ok", 1, False, None)
    }
    results = [RawResult.model_validate_json(Path(job["result_path"]).read_text()) for job in jobs]
    assert [result.max_concurrency for result in results] == [job["conc"] for job in jobs]
    again = json.loads(_invoke(tmp_path / "art", *seed).stdout)
    assert again["counts"] == {"reused": 8} and again["run_id"] != summary["run_id"]
    assert [(job["reused"], job["attempt"], job["result_path"]) for job in again["jobs"]] == [
        (True, 1, job["result_path"]) for job in jobs
    ]
    failed = _invoke(tmp_path / "other", *seed, "--point-deadline-s", "0.000001")
    assert failed.exit_code == 1, failed.output
    assert json.loads(failed.stdout)["counts"] == {"result-invalid": 8}


def test_help_documents_the_json_fields() -> None:
    result = CliRunner().invoke(cli, ["sweep", "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    assert "--format [table|json]" in result.output
    assert "  jobs[].result_path: Absolute path of the result file" in result.output


def test_unknown_launcher_is_a_usage_error(tmp_path: Path) -> None:
    code, output = _sweep(tmp_path, "--launcher", "k8s")
    assert code == 2
    assert (
        "Invalid value for '--launcher': 'k8s' is not one of 'sim', 'docker', 'local', 'slurm'."
        in output
    )


def test_unknown_sku_in_the_pools_file_fails_before_anything_starts(tmp_path: Path) -> None:
    pools = tmp_path / "runner-pools.yaml"
    pools.write_text("source: t\npools:\n  h200-dgx: {skus: [h200], hosts: [{url: 'unix:///x'}]}\n")
    code, output = _sweep(tmp_path / "art", "--recipe", SEEDS[0], "--launcher", "docker",
                          "--pools", str(pools))  # fmt: skip
    assert code == 1
    assert output.splitlines()[-1] == (
        f"Error: {pools}: no runner pool serves SKU 'mi325x'; it has pools h200-dgx (h200); "
        "add the SKU to a pool's skus or add a pool with skus: ['*']"
    )
    assert not (tmp_path / "art").exists()


def test_ctrl_c_cancels_the_rest_and_stops_the_simulator_process(tmp_path: Path) -> None:
    slow = [f if f != "0.001" else "0.05" for f in FAST_FLAGS]  # points of about a second
    artifacts = tmp_path / "art"
    args = ["sweep", "--launcher", "sim", "--recipe", SEEDS[0], "--artifacts-dir",
            str(artifacts), *slow]  # fmt: skip
    env = {"INFERX_STATE_DIR": str(tmp_path / "state"), "COLUMNS": "200"}
    code, output, children = interrupt_after_first_point(args, env, artifacts)
    assert_cancelled_cleanly(code, output, artifacts)
    assert children, "the simulator server should have been running"
    assert [pid for pid in children if psutil.pid_exists(pid)] == []
