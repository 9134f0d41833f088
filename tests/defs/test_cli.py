"""``inferx materialize``, ``backfill``, ``images`` and ``dagster pools`` on the test project."""

from __future__ import annotations

import dagster as dg
from click.testing import CliRunner

from inferx_pipeline.cli import cli
from inferx_pipeline.defs.assets import sweep_key
from inferx_pipeline.defs.execute import local_instance
from tests.defs.conftest import Project

H200 = "qwen3.827b-fp8-h200-vllm-mtp"
FAST = ["--num-prompts", "1", "--time-scale", "0.02", "--load-time-s", "0", "--max-turns", "1"]
NIGHTLY = "vllm/vllm-openai:nightly-cd10ed6f9f6b37a8ace9cf380007e66fe12ec0c3"


def _materialized(project: Project) -> set[str]:
    instance = local_instance(project.settings.dagster_home)
    try:
        return set(instance.get_materialized_partitions(sweep_key("h200")))
    finally:
        instance.dispose()


def test_materialize_runs_the_selection_through_dagster_and_publishes(project: Project) -> None:
    result = CliRunner().invoke(cli, ["materialize", "--recipe", H200, *FAST])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == str(project.settings.site_dir / "index.html")
    assert "SUCCESS" in result.output and "8 ok" in result.output
    assert len(_materialized(project)) == 8
    # The flags travel as run config (recorded with the run), not baked into definitions:
    # the point size as the sweep asset's config, the launcher as the launcher resource's.
    instance = local_instance(project.settings.dagster_home)
    try:
        (run,) = instance.get_runs(dg.RunsFilter(job_name="sweep_h200"))
    finally:
        instance.dispose()
    launcher = run.run_config["resources"]["launcher"]["config"]
    assert (launcher["time_scale"], launcher["kind"]) == (0.02, "sim")
    assert "num_prompts" not in launcher
    sweep = run.run_config["ops"]["sweep__h200"]["config"]
    assert (sweep["num_prompts"], sweep["max_turns"], sweep["evals"]) == (1, 1, "none")
    assert '"num_prompts":1' in run.tags["inferx/options"]
    nothing = CliRunner().invoke(cli, ["materialize", "--recipe", "no-such-*"])
    assert nothing.exit_code == 2
    assert "the selection matches no job" in nothing.output


def test_backfill_runs_each_image_the_recipe_runs_at(project: Project) -> None:
    refused = CliRunner().invoke(cli, ["backfill", "--recipe", H200, "--images", "v0.11.0"])
    assert refused.exit_code == 2
    assert "image vllm/vllm-openai:v0.11.0 is not run by any selected recipe" in refused.output
    args = ["backfill", "--recipe", H200, "--images", "nightly-old1", "--no-publish", *FAST]
    done = CliRunner().invoke(cli, args)
    assert done.exit_code == 0, done.output
    keys = _materialized(project)
    assert len(keys) == 8 and all(k.endswith("|vllm-openai:nightly-old1") for k in keys)
    instance = local_instance(project.settings.dagster_home)
    try:
        runs = instance.get_runs(dg.RunsFilter(tags={"inferx/reason": "backfill"}))
    finally:
        instance.dispose()
    assert [run.tags["inferx/backfill-recipes"] for run in runs] == [H200]


def test_images_add_and_list(project: Project) -> None:
    bad = CliRunner().invoke(cli, ["images", "add", "vllm/vllm-openai:bad tag"])
    assert bad.exit_code == 2 and "Error: " in bad.output
    first = CliRunner().invoke(cli, ["images", "add", "vllm/vllm-openai:nightly-new"])
    assert first.output == "vllm/vllm-openai:nightly-new: h200: added as vllm-openai:nightly-new\n"
    again = CliRunner().invoke(cli, ["images", "add", "vllm/vllm-openai:nightly-new"])
    assert again.output == "vllm/vllm-openai:nightly-new: h200: already a partition\n"
    unknown = CliRunner().invoke(cli, ["images", "add", "rocm/unknown:1"])
    assert unknown.exit_code == 2  # the message: tests/defs/test_image_strays.py
    assert unknown.output.startswith("Error: image rocm/unknown:1: no recipe runs at it")
    listed = CliRunner().invoke(cli, ["images", "list"]).output.splitlines()
    assert listed == [f"h200\tvllm-openai:nightly-new\tvllm/vllm-openai:nightly-new\t{H200}"]


def test_dagster_pools_sets_each_sku_pool_from_the_runner_pools(project: Project) -> None:
    result = CliRunner().invoke(cli, ["dagster", "pools"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == ["gpu-h200: 1", "gpu-mi325x: 1"]
    instance = local_instance(project.settings.dagster_home)
    try:
        assert instance.event_log_storage.get_concurrency_info("gpu-h200").slot_count == 1
    finally:
        instance.dispose()
