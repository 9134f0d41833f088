"""Materializing the assets on a real (temporary) instance with the fast simulator."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from inferx_pipeline.bench.validity import load_rules
from inferx_pipeline.defs.assets import RECIPES, jobs_version, sweep_key
from inferx_pipeline.defs.execute import publish_in_process, run_cells_in_process
from inferx_pipeline.defs.partitions import cell_key
from inferx_pipeline.matrix.partitions import Cell, cells_at, ladders
from inferx_pipeline.matrix.select import Selection
from inferx_pipeline.plan.build import MatrixRequest, build_matrix
from inferx_pipeline.results.store import ResultStore
from inferx_pipeline.sweep.artifacts import ArtifactStore
from inferx_pipeline.sweep.reuse import policy_version
from inferx_pipeline.sweep.runner import VALIDITY_FILE
from inferx_pipeline.sweep.status import load_policy
from tests.defs.conftest import SMALL, Project, unreachable_docker

H200_RECIPE = "qwen3.827b-fp8-h200-vllm-mtp"


def _cell_metadata(instance: dg.DagsterInstance, cell: Cell) -> dict[str, dg.MetadataValue]:
    """The latest materialization metadata of ``cell``'s partition."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(
            asset_key=sweep_key(cell.sku), asset_partitions=[str(cell_key(cell))]
        ),
        limit=1,
    ).records
    assert records and records[0].asset_materialization is not None
    return dict(records[0].asset_materialization.metadata)


def _versions(instance: dg.DagsterInstance, cell: Cell) -> list[tuple[str, str]]:
    """(code version, data version) of each materialization of ``cell``, oldest first."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(
            asset_key=sweep_key(cell.sku), asset_partitions=[str(cell_key(cell))]
        ),
        limit=10,
        ascending=True,
    ).records
    tags = [r.asset_materialization.tags or {} for r in records if r.asset_materialization]
    return [(t["dagster/code_version"], t["dagster/data_version"]) for t in tags]


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
    runs = run_cells_in_process(defs, instance, cells, ladder, reason="test", sweep=SMALL)
    assert [(r.status, r.jobs, r.counts) for r in runs] == [("SUCCESS", 8, {"ok": 8})]
    run = instance.get_run_by_id(runs[0].run_id)
    assert run is not None and run.tags["inferx/reason"] == "test"
    # What the UI compares before re-executing it: the location's own job, not a copy.
    assert run.job_snapshot_id == defs.resolve_job_def(run.job_name).get_job_snapshot_id()
    materialized = instance.get_materialized_partitions(sweep_key("h200"))
    image = cells[0].image
    key = "vllm-openai:nightly-cd10ed6f9f6b"  # short: the run resolved it to the reference
    assert image == "vllm/vllm-openai:nightly-cd10ed6f9f6b37a8ace9cf380007e66fe12ec0c3"
    assert materialized == {
        str(dg.MultiPartitionKey({"conc": str(c.conc), "image": key})) for c in cells
    }
    check = instance.get_latest_asset_check_evaluation_record(
        dg.AssetCheckKey(sweep_key("h200"), "result_sanity")
    )
    assert check is not None and check.evaluation is not None
    assert check.evaluation.metadata["server_launches"].value == 1  # one server, eight concs
    conc8 = _cell_metadata(instance, cells[3])
    assert conc8["jobs"].value == 1 and conc8["reused"].value is False
    assert conc8["image"].value == image  # the full reference
    assert conc8["tok/s/GPU"].value > 0 and conc8["simulated"].value is True
    assert "server_launches" not in conc8 and "wall_s" not in conc8  # the cell's, not the run's
    table = conc8["per_job"].value
    (row,) = table.records
    assert row.data["job"].startswith(H200_RECIPE) and row.data["job"].endswith(
        f"/c{cells[3].conc}"
    )
    assert row.data["tok/s/GPU"] == conc8["tok/s/GPU"].value
    manifests = list(ArtifactStore(project.settings.artifacts_dir).all_attempts())
    assert len(manifests) == 8 and {m.run_id for m in manifests} == {runs[0].run_id}
    assert key in instance.get_dynamic_partitions("images_h200")
    assert key not in instance.get_dynamic_partitions("images_mi325x")
    # The same partitions again: every point is reused, nothing is measured twice.
    again = run_cells_in_process(defs, instance, cells, ladder, reason="test", sweep=SMALL)
    assert again[0].counts == {"reused": 8}
    assert len(list(ArtifactStore(project.settings.artifacts_dir).all_attempts())) == 8
    reused = _cell_metadata(instance, cells[3])
    assert reused["reused"].value is True
    assert reused["measured_in"] == dg.MetadataValue.dagster_run(runs[0].run_id)
    forced = run_cells_in_process(
        defs, instance, cells[:1], ladder, reason="test", sweep={**SMALL, "force": True}
    )
    assert forced[0].counts == {"ok": 1}
    assert instance.get_run_by_id(forced[0].run_id).tags["inferx/options"].count('"force":true')
    published = publish_in_process(defs, instance)
    assert published.success
    store = ResultStore(project.settings.results_url)
    try:
        assert store.count() == 9  # eight points, one of them measured twice (forced)
    finally:
        store.close()
    assert (project.settings.site_dir / "index.html").is_file()


def test_a_run_with_failed_jobs_records_them_and_fails(
    project: Project, instance: dg.DagsterInstance, tmp_path: Path
) -> None:
    defs = project.definitions(launcher=unreachable_docker(tmp_path))
    cells, ladder = project.cells(H200_RECIPE)
    runs = run_cells_in_process(defs, instance, cells[:2], ladder, reason="test", sweep=SMALL)
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
        reason="backfill", sweep=SMALL,
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


def test_a_partition_key_that_is_no_image_reference_fails_the_run_before_measuring(
    project: Project, instance: dg.DagsterInstance
) -> None:
    defs = project.definitions()
    cells, ladder = project.cells(H200_RECIPE)
    bad = cells[0].model_copy(update={"image": "not an image!"})
    (run,) = run_cells_in_process(defs, instance, [bad], ladder, reason="test", sweep=SMALL)
    assert run.status == "FAILURE"
    failure = next(
        event.dagster_event.step_failure_data
        for event in instance.all_logs(run.run_id)
        if event.dagster_event is not None and event.dagster_event.is_step_failure
    )
    assert "image partition 'not an image!' of images_h200" in str(failure)
    assert not list(ArtifactStore(project.settings.artifacts_dir).all_attempts())


def test_a_run_shows_its_effective_point_size_in_its_tags_and_each_cell(
    project: Project, instance: dg.DagsterInstance
) -> None:
    defs = project.definitions()
    cells, ladder = project.cells(H200_RECIPE)
    small = {"prompts_per_conc": 1, "max_turns": 1, "think_time_scale": 0.0}
    (run,) = run_cells_in_process(defs, instance, cells[:2], ladder, reason="test", sweep=small)
    assert run.status == "SUCCESS"
    catalog = project.settings.catalog_dir
    version = policy_version(load_policy(catalog), load_rules(catalog / VALIDITY_FILE))
    tags = instance.get_run_by_id(run.run_id).tags
    assert (tags["inferx/launcher"], tags["inferx/validity-policy"]) == ("sim", version)
    assert json.loads(tags["inferx/options"]) == {
        "force": False,
        "max_turns": 1,
        "num_prompts": None,
        "prompts_per_conc": 1,
        "seed": 0,
        "think_time_scale": 0.0,
        "warmup_prompts": 0,
    }
    conc2 = _cell_metadata(instance, cells[1])
    assert cells[1].conc == 2
    assert conc2["prompts_per_conc"].value == 1 and conc2["num_prompts"].value == 2
    assert conc2["validity_policy"].value == version and conc2["launcher"].value == "sim"
    assert conc2["min_duration_s"].value == 0.0  # the test catalog's relaxed rule
    assert conc2["measured_prompts"].value == 2 and conc2["measured_s"].value > 0


def test_a_cells_code_version_is_its_recipes_fingerprint_stable_across_runs(
    project: Project, instance: dg.DagsterInstance
) -> None:
    defs = project.definitions()
    cells, ladder = project.cells(H200_RECIPE)
    h200 = [
        job for job in build_matrix(MatrixRequest(paths=()), project.settings) if job.sku == "h200"
    ]
    expected = jobs_version(h200)
    for _ in range(2):  # measured, then reused: the same jobs, the same versions
        run_cells_in_process(defs, instance, cells[:1], ladder, reason="test", sweep=SMALL)
    first, second = _versions(instance, cells[0])
    assert first[0] == expected and first == second
