"""Image partitions only where a recipe runs: ``images add`` refuses, ``images prune`` removes.

A stray is an image partition of a SKU that none of the SKU's recipes runs at: its cells
would measure nothing. The seed paths (``sweep_matrix``, ``inferx materialize``) add none;
``inferx images add`` refuses one; ``inferx images prune`` removes those left behind (a
recipe repinned or removed), keeping their materializations.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from click.testing import CliRunner

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.cli import cli
from inferx_pipeline.defs.assets import sweep_key
from inferx_pipeline.defs.definitions import build_definitions
from inferx_pipeline.defs.execute import local_instance
from inferx_pipeline.defs.partitions import add_images, images_name, record_images, stray_images
from inferx_pipeline.matrix.partitions import Cell
from inferx_pipeline.plan.build import MatrixRequest, build_matrix
from inferx_pipeline.settings import Settings
from tests.defs.conftest import FAST, Project
from tests.defs.test_cli import FAST as FAST_FLAGS
from tests.smoke import smoke_root

H200 = "qwen3.827b-fp8-h200-vllm-mtp"
BF16 = "qwen3.827b-bf16-mi325x-vllm-mtp"
NIGHTLY = "vllm/vllm-openai:nightly-cd10ed6f9f6b37a8ace9cf380007e66fe12ec0c3"
ROCM_NIGHTLY = "vllm/vllm-openai-rocm:nightly-a8d1aa9c99b8698a2a78b611b7a10c30e6b3995b"
TRT = "nvcr.io#nvidia/tensorrt-llm/release:1.3.0rc14"
STRAY = "(no recipe runs at this image; `inferx images prune` removes it)"


def _partitions(project: Project, sku: str) -> list[str]:
    instance = local_instance(project.settings.dagster_home)
    try:
        return sorted(instance.get_dynamic_partitions(images_name(sku)))
    finally:
        instance.dispose()


def test_add_refuses_an_image_no_recipe_runs_at_and_adds_nothing(project: Project) -> None:
    untracked = CliRunner().invoke(cli, ["images", "add", "vllm/vllm-openai:v0.11.0"])
    assert untracked.exit_code == 2
    assert untracked.output == (
        "Error: image vllm/vllm-openai:v0.11.0: no recipe runs at it on any SKU, so no SKU "
        f"can offer it as a partition (on h200: {H200} runs {NIGHTLY} and tags nightly-*); "
        "give an image a recipe pins or tracks (its engine.track tags), or pin or track "
        "this one in a recipe; nothing was added\n"
    )
    unknown = CliRunner().invoke(cli, ["images", "add", "rocm/unknown:1"])
    assert unknown.exit_code == 2
    assert unknown.output == (
        "Error: image rocm/unknown:1: no recipe runs at it on any SKU, so no SKU can offer it "
        "as a partition (no recipe uses the repository docker.io/rocm/unknown; on h200: "
        f"{H200} runs {NIGHTLY} and tags nightly-*; on mi325x: {BF16} runs {ROCM_NIGHTLY}); "
        "give an image a recipe pins or tracks (its engine.track tags), or pin or track "
        "this one in a recipe; nothing was added\n"
    )
    # One refused reference refuses the whole command before anything is written.
    mixed = CliRunner().invoke(cli, ["images", "add", "vllm/vllm-openai:nightly-new", TRT])
    assert mixed.exit_code == 2
    assert mixed.output.startswith(f"Error: image {TRT}: no recipe runs at it on any SKU")
    assert _partitions(project, "h200") == []
    # An image some recipe runs at is added on that recipe's SKU only.
    added = CliRunner().invoke(cli, ["images", "add", NIGHTLY])
    assert added.exit_code == 0, added.output
    assert added.output == f"{NIGHTLY}: h200: added as vllm-openai:nightly-cd10ed6f9f6b\n"
    assert (_partitions(project, "h200"), _partitions(project, "mi325x")) == (
        ["vllm-openai:nightly-cd10ed6f9f6b"],
        [],
    )


def test_prune_removes_strays_from_every_sku_and_keeps_what_recipes_run(
    project: Project,
) -> None:
    instance = local_instance(project.settings.dagster_home)
    try:
        add_images(instance, [Cell(sku="h200", conc=1, image=NIGHTLY)])
        # Strays as an older checkout leaves them: the trt recipe's pin on h200 (a recipe
        # this project has not), an image on a SKU none of its recipes use, a UI-typed key.
        record_images(instance, "h200", [TRT])
        instance.add_dynamic_partitions("images_h200", ["release:1.3.0rc14", "typed in ui"])
        record_images(instance, "mi300x", ["lmsysorg/sglang:v0.5.12-rocm700-mi30x"])
        instance.add_dynamic_partitions("images_mi300x", ["sglang:v0.5.12-rocm700-mi30x"])
        stray_cell = dg.MultiPartitionKey({"conc": "4", "image": "release:1.3.0rc14"})
        instance.report_runless_asset_event(
            dg.AssetMaterialization(asset_key=sweep_key("h200"), partition=str(stray_cell))
        )
    finally:
        instance.dispose()
    listed = CliRunner().invoke(cli, ["images", "list"])
    assert listed.exit_code == 0, listed.output
    assert f"h200\trelease:1.3.0rc14\t{TRT}\t{STRAY}" in listed.output.splitlines()
    strays = [
        f"h200\trelease:1.3.0rc14\t{TRT}",
        "h200\ttyped in ui\ttyped in ui",
        "mi300x\tsglang:v0.5.12-rocm700-mi30x\tlmsysorg/sglang:v0.5.12-rocm700-mi30x",
    ]
    dry = CliRunner().invoke(cli, ["images", "prune", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert dry.output.splitlines() == [f"{line}\twould remove" for line in strays]
    assert len(_partitions(project, "h200")) == 3
    pruned = CliRunner().invoke(cli, ["images", "prune"])
    assert pruned.exit_code == 0, pruned.output
    assert pruned.output.splitlines() == [f"{line}\tremoved" for line in strays]
    assert _partitions(project, "h200") == ["vllm-openai:nightly-cd10ed6f9f6b"]
    assert _partitions(project, "mi300x") == []
    again = CliRunner().invoke(cli, ["images", "prune"])
    assert again.output == "no stray image partitions\n"
    instance = local_instance(project.settings.dagster_home)
    try:  # the stray's materialization is history: it stays
        events = instance.fetch_materializations(sweep_key("h200"), limit=10).records
        assert [event.partition_key for event in events] == [str(stray_cell)]
    finally:
        instance.dispose()


def test_prune_refuses_while_a_recipe_is_invalid(project: Project) -> None:
    recipe = project.root / "recipes" / "qwen3.8-27b" / "qwen3.827b-fp8-h200-vllm-mtp.yaml"
    recipe.write_text(recipe.read_text().replace("sku: h200", "sku: no-such-sku"))
    refused = CliRunner().invoke(cli, ["images", "prune"])
    assert refused.exit_code == 2
    assert refused.output.startswith("Error: ")
    assert "qwen3.827b-fp8-h200-vllm-mtp.yaml" in refused.output


def test_sweep_matrix_on_every_shipped_recipe_adds_no_stray(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's case: h200's trt pin (release:1.3.0rc14) is run by its own recipe."""
    monkeypatch.setenv("INFERX_ROOT", str(smoke_root(tmp_path / "root")))
    monkeypatch.setenv("INFERX_STATE_DIR", str(tmp_path / "state"))
    settings = Settings()
    defs = build_definitions(settings, resources={"launcher": FAST})
    with dg.instance_for_test() as instance:
        matrix = defs.resolve_assets_def("sweep_matrix")  # its resources bound
        assert dg.materialize([matrix], instance=instance).success
        jobs = build_matrix(MatrixRequest(paths=()), settings)
        skus = sorted(cached_catalog(settings.catalog_dir).skus)
        assert stray_images(instance, skus, jobs) == {}
        assert "release:1.3.0rc14" in instance.get_dynamic_partitions("images_h200")


def test_materializing_the_seeds_and_their_upstream_leaves_no_stray(project: Project) -> None:
    """The demo's path: the seed sweeps by `inferx materialize`, the matrix as the UI does."""
    args = ["materialize", "--recipe", H200, "--recipe", BF16, "--no-publish", *FAST_FLAGS]
    done = CliRunner().invoke(cli, args)
    assert done.exit_code == 0, done.output
    defs = project.definitions()
    instance = local_instance(project.settings.dagster_home)
    try:
        matrix = defs.resolve_assets_def("sweep_matrix")
        assert dg.materialize([matrix], instance=instance).success
    finally:
        instance.dispose()
    listed = CliRunner().invoke(cli, ["images", "list"])
    assert listed.exit_code == 0, listed.output
    assert listed.output.splitlines() == [
        f"h200\tvllm-openai:nightly-cd10ed6f9f6b\t{NIGHTLY}\t{H200}",
        f"mi325x\tvllm-openai-rocm:nightly-a8d1aa9c99b8\t{ROCM_NIGHTLY}\t{BF16}",
    ]
    pruned = CliRunner().invoke(cli, ["images", "prune", "--dry-run"])
    assert pruned.output == "no stray image partitions\n"
