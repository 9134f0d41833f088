"""The curve sensor against real curve files, and the run-status sensors against real runs."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from inferx_pipeline.defs.execute import run_cells_in_process
from inferx_pipeline.defs.partitions import RANGE_END_TAG, RANGE_START_TAG, images_of_keys
from inferx_pipeline.sweep.retries import RetryLedger
from tests.defs.conftest import SMALL, Project, tick, unreachable_docker

H200_RECIPE = "qwen3.827b-fp8-h200-vllm-mtp"
BF16_IMAGE = "vllm/vllm-openai-rocm:nightly-a8d1aa9c99b8698a2a78b611b7a10c30e6b3995b"


def _bump(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_a_changed_curve_requests_exactly_its_recipes_partitions(
    project: Project, instance: dg.DagsterInstance
) -> None:
    defs = project.definitions()
    first = tick(defs, "golden_curve_changes", instance, None)
    assert first.run_requests == [] and first.cursor
    golden = project.root / "golden_al_distribution"
    # A curve no recipe uses: the cursor moves, nothing runs.
    _bump(golden / "dsv4_mtp.yaml", "source_run:", "# edited\nsource_run:")
    unused = tick(defs, "golden_curve_changes", instance, first.cursor)
    assert unused.run_requests == [] and unused.cursor != first.cursor
    assert unused.skip_message == "changed curves dsv4_mtp: no recipe uses them"
    # The BF16 recipe's curve (synthetic acceptance): its mi325x partitions at its image.
    _bump(golden / "qwen3.8-27b_mtp.yaml", "3: 2.51", "3: 2.52")
    changed = tick(defs, "golden_curve_changes", instance, unused.cursor)
    assert len(changed.run_requests) == 1
    request = changed.run_requests[0]
    assert request.job_name == "sweep_mi325x"
    # Short keys, each recorded with its full reference where the run resolves it.
    assert request.tags[RANGE_START_TAG] == "1|vllm-openai-rocm:nightly-a8d1aa9c99b8"
    assert request.tags[RANGE_END_TAG] == "128|vllm-openai-rocm:nightly-a8d1aa9c99b8"
    key = "vllm-openai-rocm:nightly-a8d1aa9c99b8"
    assert images_of_keys(instance, "mi325x", [key]) == {key: BF16_IMAGE}
    assert request.tags["inferx/reason"] == "golden-curve-changed"
    assert request.tags["inferx/curves"] == "qwen3.8-27b_mtp"
    again = tick(defs, "golden_curve_changes", instance, changed.cursor)
    assert again.run_requests == [] and again.skip_message == "no golden curve changed"


def test_a_successful_sweep_run_requests_the_publish_job(
    project: Project, instance: dg.DagsterInstance
) -> None:
    defs = project.definitions()
    cells, ladder = project.cells(H200_RECIPE)
    run = run_cells_in_process(defs, instance, cells[:1], ladder, reason="test", sweep=SMALL)[0]
    dagster_run = instance.get_run_by_id(run.run_id)
    assert dagster_run is not None
    sensor = defs.resolve_sensor_def("publish_after_sweeps")
    request = sensor(_status_context(defs, sensor, instance, dagster_run, success=True))
    assert isinstance(request, dg.RunRequest)
    assert request.run_key == f"publish-after:{run.run_id}"
    assert request.tags["inferx/reason"] == "sweep-succeeded"


def _status_context(
    defs: dg.Definitions,
    sensor: dg.SensorDefinition,
    instance: dg.DagsterInstance,
    run: dg.DagsterRun,
    *,
    success: bool,
) -> dg.RunStatusSensorContext:
    """The context a run-status sensor gets for ``run``'s last success or failure event."""
    kind = dg.DagsterEventType.RUN_SUCCESS if success else dg.DagsterEventType.RUN_FAILURE
    records = instance.get_records_for_run(run.run_id, of_type=kind).records
    event = records[-1].event_log_entry.dagster_event
    assert event is not None
    return dg.build_run_status_sensor_context(
        sensor_name=sensor.name,
        dagster_instance=instance,
        dagster_run=run,
        dagster_event=event,
        resources=dict(defs.resources or {}),
    )


def test_a_failed_sweep_run_is_recorded_and_retried_once_when_transient(
    project: Project, instance: dg.DagsterInstance, tmp_path: Path
) -> None:
    defs = project.definitions(launcher=unreachable_docker(tmp_path))
    cells, ladder = project.cells(H200_RECIPE)
    sweep = {"prompts_per_conc": 3}
    run = run_cells_in_process(defs, instance, cells[:2], ladder, reason="test", sweep=sweep)[0]
    dagster_run = instance.get_run_by_id(run.run_id)
    assert dagster_run is not None and run.status == "FAILURE"
    sensor = defs.resolve_sensor_def("record_failed_sweeps")
    context = _status_context(defs, sensor, instance, dagster_run, success=False)
    requests = sensor(context.for_run_failure())
    assert isinstance(requests, list)
    assert [r.job_name for r in requests] == ["publish", "sweep_h200"]
    retry = requests[1]
    assert retry.run_key == f"retry:{run.run_id}"
    assert retry.tags["inferx/retry"] == "1" and retry.tags["inferx/retry-of"] == run.run_id
    assert retry.tags[RANGE_START_TAG] == dagster_run.tags[RANGE_START_TAG]
    # The retry measures points of the same size as the failed run (its op config).
    assert retry.run_config == dagster_run.run_config
    (op_config,) = retry.run_config["ops"].values()
    assert op_config["config"] == sweep
    entries = list(RetryLedger(project.settings.state / "retries.jsonl").entries())
    assert len(entries) == 1 and entries[0].decision.retry
    assert {job.status for job in entries[0].failed} == {"launch-failed"}


def test_a_run_status_tick_with_no_finished_run_is_dagsters_empty_result(
    project: Project, instance: dg.DagsterInstance
) -> None:
    # The sensors' descriptions quote this message: it changes only with Dagster.
    defs = project.definitions()
    for name in ("publish_after_sweeps", "record_failed_sweeps"):
        first = tick(defs, name, instance, None)
        assert first.skip_message.startswith(f"Initiating {name}.")
        idle = tick(defs, name, instance, first.cursor)
        assert idle.skip_message == "Sensor function returned an empty result"
        description = defs.resolve_sensor_def(name).description
        assert description is not None and idle.skip_message in description
