"""The code location: loads, validates, and has exactly the assets, partitions, checks,
jobs and sensors we expect (a snapshot that fails on any unreviewed change)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from inferx_pipeline.defs.assets import jobs_version, sweep_key
from inferx_pipeline.defs.definitions import build_definitions, defs
from inferx_pipeline.defs.jobs import PUBLISH_JOB
from inferx_pipeline.plan.build import MatrixRequest, build_matrix
from inferx_pipeline.settings import Settings
from tests.defs.conftest import BF16, H200, Project
from tests.paths import ROOT
from tests.smoke import smoke_root

# What a person chooses per sweep run: the sweep asset's config, and nowhere else.
SWEEP_KNOBS = {
    "force",
    "prompts_per_conc",
    "num_prompts",
    "seed",
    "warmup_prompts",
    "max_turns",
    "think_time_scale",
    "evals",
}


def _fields(config_type: Any, *path: str) -> dict[str, Any]:
    """The fields of the config type at ``path`` under ``config_type`` (a shape)."""
    for name in path:
        config_type = config_type.fields[name].config_type
    return dict(config_type.fields)


def test_definitions_load_and_validate(project: Project) -> None:
    dg.Definitions.validate_loadable(project.definitions())


def test_snapshot_of_assets_partitions_checks_jobs_sensors(project: Project) -> None:
    defs = project.definitions()
    graph = defs.resolve_asset_graph()
    keys = sorted(key.to_user_string() for key in graph.get_all_asset_keys())
    assert keys == [
        "golden_curves",
        "leaderboard",
        "normalized_results",
        "recipes",
        "sweep/h200",
        "sweep/mi325x",
        "sweep_matrix",
    ]
    checks = sorted(f"{k.asset_key.to_user_string()}:{k.name}" for k in graph.asset_check_keys)
    assert checks == [
        "leaderboard:completeness",
        "normalized_results:eval_thresholds",
        "recipes:policy_rules",
        "sweep/h200:eval_thresholds",
        "sweep/h200:result_sanity",
        "sweep/mi325x:eval_thresholds",
        "sweep/mi325x:result_sanity",
    ]
    for sku, concs in {
        "h200": [1, 2, 4, 8, 16, 32, 64, 128],
        "mi325x": [1, 2, 4, 8, 16, 32, 64, 128],
    }.items():
        node = graph.get(sweep_key(sku))
        parts = node.partitions_def
        assert isinstance(parts, dg.MultiPartitionsDefinition)
        dims = {d.name: d.partitions_def for d in parts.partitions_defs}
        assert dims["conc"].get_partition_keys() == [str(c) for c in concs]
        assert isinstance(dims["image"], dg.DynamicPartitionsDefinition)
        assert dims["image"].name == f"images_{sku}"  # each SKU offers its own images
        assert node.pools == {f"gpu-{sku}"}
        assert node.backfill_policy == dg.BackfillPolicy.single_run()
    assert sorted(job.name for job in defs.jobs or []) == [
        "pr_sweep",
        "publish",
        "sweep_h200",
        "sweep_mi325x",
    ]
    assert sorted(s.name for s in defs.sensors or []) == [
        "fail_dead_runs",
        "golden_curve_changes",
        "materialize_missing_upstream",
        "merged_recipe_changes",
        "new_image_tags",
        "publish_after_sweeps",
        "pull_requests",
        "record_failed_sweeps",
    ]
    assert sorted(defs.resources or {}) == [
        "evals",
        "forge",
        "launcher",
        "project",
        "recipes_repo",
        "registries",
        "results",
    ]


def test_the_checkouts_own_recipes_load_every_catalog_sku_they_use() -> None:
    graph = defs().resolve_asset_graph()
    sweeps = sorted(k.to_user_string() for k in graph.get_all_asset_keys() if k.path[0] == "sweep")
    assert sweeps == ["sweep/cpu", "sweep/h200", "sweep/mi300x", "sweep/mi325x", "sweep/mi355x"]
    assert (ROOT / "workspace.yaml").is_file()


SNAPSHOT_IDS = """
import json, warnings
import dagster as dg
warnings.filterwarnings("ignore", category=dg.BetaWarning)
from inferx_pipeline.defs.definitions import defs
jobs = defs().get_repository_def().get_all_jobs()
print(json.dumps({job.name: job.get_job_snapshot_id() for job in jobs}))
"""


def test_two_processes_load_the_same_job_snapshots(project: Project) -> None:
    """What the UI compares on re-execution: a job's snapshot id in the run and in the location.

    Each process has its own string-hash seed, so set or dict order leaking into the
    definitions would show here.
    """
    loads = [
        subprocess.run(
            [sys.executable, "-c", SNAPSHOT_IDS],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            timeout=240,
            check=True,
        ).stdout
        for seed in (1, 2)
    ]
    assert loads[0] == loads[1]
    ids = json.loads(loads[0])
    assert sorted(ids) == ["__ASSET_JOB", "pr_sweep", "publish", "sweep_h200", "sweep_mi325x"]
    here = defs().get_repository_def().get_all_jobs()
    assert ids == {job.name: job.get_job_snapshot_id() for job in here}  # and this process's


def test_dg_check_defs_passes_on_the_project(project: Project) -> None:
    """``dg`` (``[tool.dg]`` in pyproject.toml) loads the one definitions module."""
    venv = Path(sys.executable).parents[1]
    done = subprocess.run(
        [str(venv / "bin" / "dg"), "check", "defs"],
        cwd=ROOT,
        env={**os.environ, "VIRTUAL_ENV": str(venv)},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "All definitions loaded successfully." in done.stdout + done.stderr


def test_the_results_url_reaches_run_storage_by_variable_name_only(
    project: Project, instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "postgresql+psycopg2://inferx:s3cret-pw@127.0.0.1:9/results"
    monkeypatch.setenv("INFERX_DATABASE_URL", secret)
    defs = Project(project.root, type(project.settings)()).definitions()
    result = defs.resolve_job_def(PUBLISH_JOB).execute_in_process(
        instance=instance, raise_on_error=False
    )  # fails to connect (nothing listens on port 9): the run and its snapshot are stored
    run = instance.get_run_by_id(result.run_id)
    assert run is not None and run.job_snapshot_id is not None
    stored = dg.serialize_value(instance.get_job_snapshot(run.job_snapshot_id)) + str(
        run.run_config
    )
    assert "INFERX_DATABASE_URL" in stored and "s3cret" not in stored


def test_each_sweep_knob_has_one_documented_place_in_the_launchpad(project: Project) -> None:
    defs = project.definitions()
    schema = defs.resolve_job_def("sweep_h200").run_config_schema.config_type
    sweep = _fields(schema, "ops", "sweep__h200", "config")
    launcher = _fields(schema, "resources", "launcher", "config")
    assert set(sweep) == SWEEP_KNOBS
    assert not SWEEP_KNOBS & set(launcher)  # the launcher says where, not how big
    configurable = ("project", "launcher", "results", "evals", "recipes_repo")
    for fields in (sweep, *(_fields(schema, "resources", r, "config") for r in configurable)):
        assert all(field.description for field in fields.values()), sorted(fields)
    evals = defs.resources["evals"].get_resource_definition().description  # type: ignore[union-attr]
    assert evals is not None and "lm-eval" in evals and "test" not in evals.lower()


def test_sweep_kinds_follow_the_skus_vendor(tmp_path: Path) -> None:
    tiny = "tiny/tiny-qwen3-bf16-cpu-vllm-ngram.yaml"
    root = smoke_root(tmp_path / "root", (H200, BF16, tiny))
    graph = build_definitions(
        Settings(root=root, state_dir=tmp_path / "state")
    ).resolve_asset_graph()
    kinds = {sku: set(graph.get(sweep_key(sku)).kinds) for sku in ("h200", "mi325x", "cpu")}
    assert kinds == {
        "h200": {"python", "nvidia", "gpu"},
        "mi325x": {"python", "amd", "gpu"},
        "cpu": {"python", "cpu"},
    }


def test_a_sweeps_code_version_changes_with_its_jobs_not_with_notes(project: Project) -> None:
    def versions() -> dict[str, str | None]:
        graph = project.definitions().resolve_asset_graph()
        return {sku: graph.get(sweep_key(sku)).code_version for sku in ("h200", "mi325x")}

    jobs = build_matrix(MatrixRequest(paths=()), project.settings)
    before = versions()
    assert before["h200"] == jobs_version(job for job in jobs if job.sku == "h200")
    recipe = project.root / "recipes" / H200
    recipe.write_text(recipe.read_text() + "notes: tuned\n")
    assert versions() == before  # notes change no measurement
    recipe.write_text(recipe.read_text().replace("floor: 16", "floor: 32"))
    after = versions()
    assert after["h200"] != before["h200"] and after["mi325x"] == before["mi325x"]
