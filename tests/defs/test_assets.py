"""Materializing the assets on a real (temporary) instance with the fast simulator."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from inferx_pipeline.defs.assets import RECIPES, sweep_key
from inferx_pipeline.defs.execute import publish_in_process, run_cells_in_process
from inferx_pipeline.defs.partitions import IMAGES_NAME
from inferx_pipeline.matrix.build import MatrixRequest, build_matrix
from inferx_pipeline.matrix.partitions import cells_at, ladders
from inferx_pipeline.matrix.select import Selection
from inferx_pipeline.results.store import ResultStore
from inferx_pipeline.sweep.artifacts import ArtifactStore
from tests.defs.conftest import Project, unreachable_docker

H200_RECIPE = "qwen3.827b-fp8-h200-vllm-mtp"


def test_recipes_asset_reports_counts_and_blocks_on_a_broken_recipe(
    project: Project, instance: dg.DagsterInstance
) -> None:
    defs = project.definitions()
    ok = dg.materialize([defs.resolve_assets_def(RECIPES)], instance=instance)
    assert ok.success
    shown = ok.asset_materializations_for_node("recipes")[0].metadata
    assert shown["recipes"].value == 2 and shown["errors"].value == 0
    broken = project.root / "recipes" / "broken.yaml"
    broken.write_text("id: broken\nsku: h200\nmodel: {hf-id: x}\nbogus: 1\n")
    result = dg.materialize(
        [defs.resolve_assets_def(RECIPES)],
        instance=instance,
        raise_on_error=False,
    )
    check = result.get_asset_check_evaluations()[0]
    assert not check.passed and check.severity == dg.AssetCheckSeverity.ERROR
    table = str(check.metadata["errors"].value)
    assert "broken.yaml" in table and "bogus" in table


def test_a_range_run_measures_every_partition_on_one_server(
    project: Project, instance: dg.DagsterInstance
) -> None:
    defs = project.definitions()
    cells, ladder = project.cells(H200_RECIPE)
    runs = run_cells_in_process(defs, instance, cells, ladder, reason="test")
    assert [(r.status, r.jobs, r.counts) for r in runs] == [("SUCCESS", 8, {"ok": 8})]
    run = instance.get_run_by_id(runs[0].run_id)
    assert run is not None and run.tags["inferx/reason"] == "test"
    materialized = instance.get_materialized_partitions(sweep_key("h200"))
    image = cells[0].image
    assert materialized == {
        str(dg.MultiPartitionKey({"conc": str(c.conc), "image": image})) for c in cells
    }
    event = instance.get_latest_materialization_event(sweep_key("h200"))
    assert event is not None and event.asset_materialization is not None
    shown = event.asset_materialization.metadata
    assert shown["server_launches"].value == 1  # one server for eight concurrencies
    assert "qwen3.827b-fp8-h200-vllm-mtp/fixed-seq-len-1024x1024" in str(shown["per_job"].value)
    manifests = list(ArtifactStore(project.settings.artifacts_dir).all_attempts())
    assert len(manifests) == 8 and {m.run_id for m in manifests} == {runs[0].run_id}
    assert image in instance.get_dynamic_partitions(IMAGES_NAME)
    # The same partitions again: every point is reused, nothing is measured twice.
    again = run_cells_in_process(defs, instance, cells, ladder, reason="test")
    assert again[0].counts == {"reused": 8}
    assert len(list(ArtifactStore(project.settings.artifacts_dir).all_attempts())) == 8
    published = publish_in_process(defs, instance)
    assert published.success
    store = ResultStore(project.settings.results_url)
    try:
        assert store.count() == 8
    finally:
        store.close()
    assert (project.settings.site_dir / "index.html").is_file()


def test_a_run_with_failed_jobs_records_them_and_fails(
    project: Project, instance: dg.DagsterInstance, tmp_path: Path
) -> None:
    defs = project.definitions(launcher=unreachable_docker(tmp_path))
    cells, ladder = project.cells(H200_RECIPE)
    runs = run_cells_in_process(defs, instance, cells[:2], ladder, reason="test")
    assert [(r.status, r.jobs) for r in runs] == [("FAILURE", 2)]
    assert runs[0].counts == {"launch-failed": 2}
    assert instance.get_materialized_partitions(sweep_key("h200")) == set()
    with pytest.raises(StopIteration):
        next(ArtifactStore(project.settings.artifacts_dir).all_attempts())


def test_a_backfill_over_three_image_tags_gives_three_result_sets(
    project: Project, instance: dg.DagsterInstance
) -> None:
    request = MatrixRequest(paths=(), selection=Selection(recipes=(H200_RECIPE,)))
    jobs = [job for job in build_matrix(request, project.settings) if job.conc in (1, 2)]
    repo = jobs[0].engine.image.rsplit(":", 1)[0]
    images = [f"{repo}:nightly-{tag}" for tag in ("aaa", "bbb", "ccc")]
    defs = project.definitions()
    runs = run_cells_in_process(
        defs, instance, cells_at(jobs, images), ladders(build_matrix(request, project.settings)),
        reason="backfill",
    )  # fmt: skip
    assert sorted((r.cells.image, r.cells.concs, r.status) for r in runs) == [
        (image, (1, 2), "SUCCESS") for image in images
    ]
    assert publish_in_process(defs, instance).success
    store = ResultStore(project.settings.results_url)
    try:
        rows = store.read_frame()
    finally:
        store.close()
    assert sorted(rows["image"].unique()) == images
    assert rows.groupby("image").size().to_dict() == dict.fromkeys(images, 2)
    history = (project.settings.site_dir / "history").glob("*.html")
    page = next(p for p in history if H200_RECIPE in p.read_text())
    assert all(image.split(":")[1] in page.read_text() for image in images)
