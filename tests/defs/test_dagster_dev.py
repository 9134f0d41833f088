"""The real thing: ``dagster dev`` on the test project, runs launched over GraphQL.

One ``dagster dev`` (webserver, daemon, code server) for the module, on a free
loopback port, stopped by PID at the end. Checks: a partition range launched over
GraphQL succeeds and its asset page renders in headless Chromium (screenshot saved
under the test's output); queued runs of two SKUs respect the per-SKU pool (limit 1):
runs of one SKU never overlap, runs of the two SKUs do; and what a benchmark engineer
does in the UI (materialize a cell with fresh options, add an image, preview sensors),
with the screenshots kept under the test's output (``--basetemp`` to keep them).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import psutil
import pytest

from inferx_pipeline.defs.devserver import DagsterDev
from inferx_pipeline.defs.execute import (
    graphql_client,
    local_instance,
    prepare_instance,
    submit_cells,
)
from inferx_pipeline.defs.partitions import add_images, cell_key, image_key
from inferx_pipeline.matrix.partitions import Cell, ladders, pinned_cells
from inferx_pipeline.matrix.select import Selection
from inferx_pipeline.plan.build import MatrixRequest, build_matrix
from inferx_pipeline.settings import Settings
from tests.defs.conftest import BF16, H200, SMALL
from tests.defs.graphql import graphql
from tests.paths import ROOT
from tests.smoke import smoke_root

READY_DEADLINE_S = 180.0
RUN_DEADLINE_S = 300.0
TERMINAL = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Dev:
    """The running server, the project it serves, and the instance (same storage)."""

    def __init__(self, server: DagsterDev, settings: Settings, env: dict[str, str]) -> None:
        self.server = server
        self.settings = settings
        self.env = env

    def cells(self, recipe: str) -> tuple[list[Cell], dict[str, tuple[int, ...]]]:
        os.environ.update(self.env)
        request = MatrixRequest(paths=(), selection=Selection(recipes=(recipe,)))
        jobs = build_matrix(request, self.settings)
        return sorted(pinned_cells(jobs), key=lambda c: c.conc), ladders(jobs)


def _launcher_config(time_scale: float) -> dict[str, Any]:
    config = {"time_scale": time_scale, "load_time_s": 0}
    return {"resources": {"launcher": {"config": config}}}


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dev]:
    base = tmp_path_factory.mktemp("dagster-dev")
    root = smoke_root(base / "root", (H200, BF16))
    env = {"INFERX_ROOT": str(root), "INFERX_STATE_DIR": str(base / "state")}
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    settings = Settings()
    # What `inferx dagster ui` does first: the embedded dagster.yaml and the pool limits.
    limits = prepare_instance(settings.dagster_home, ("h200", "mi325x"), None, os.environ)
    assert limits == {"gpu-h200": 1, "gpu-mi325x": 1}
    server = DagsterDev(
        ROOT / "workspace.yaml",
        settings.dagster_home,
        port=_free_port(),
        log=base / "dagster-dev.log",
        env={**os.environ, **env},
    )
    try:
        with server:
            server.wait_ready(READY_DEADLINE_S)
            yield Dev(server, settings, env)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _wait(client: Any, run_ids: list[str]) -> dict[str, dg.DagsterRunStatus]:
    deadline = time.monotonic() + RUN_DEADLINE_S
    while time.monotonic() < deadline:
        statuses = {run_id: client.get_run_status(run_id) for run_id in run_ids}
        if all(status in TERMINAL for status in statuses.values()):
            return statuses
        time.sleep(0.5)  # polling the webserver for run status, under a deadline
    raise AssertionError(f"runs not finished after {RUN_DEADLINE_S:.0f} s: {statuses}")


@pytest.mark.chromium
def test_a_partition_range_over_graphql_and_its_asset_page(
    dev: Dev, chromium_browser: Any, tmp_path: Path
) -> None:
    client = graphql_client(dev.server.url)
    cells, ladder = dev.cells("qwen3.827b-fp8-h200-vllm-mtp")
    instance = local_instance(dev.settings.dagster_home)
    try:
        add_images(instance, cells[:1])
    finally:
        instance.dispose()
    runs = submit_cells(
        client, cells[:2], ladder, reason="ui-test", config=_launcher_config(0.02), sweep=SMALL
    )
    assert [run.cells.concs for run in runs] == [(1, 2)]
    assert _wait(client, [runs[0].run_id]) == {runs[0].run_id: dg.DagsterRunStatus.SUCCESS}
    page = chromium_browser.new_page()
    try:
        page.goto(f"{dev.server.url}/assets/sweep/h200", wait_until="networkidle")
        # The materialization's own metadata, rendered: the page shows its cell's numbers.
        page.get_by_text("tok/s/GPU").first.wait_for(timeout=60_000)
        assert page.title().startswith("Assets | sweep / h200")
        page.screenshot(path=str(tmp_path / "asset-page.png"), full_page=True)
    finally:
        page.close()
    assert (tmp_path / "asset-page.png").stat().st_size > 10_000


def test_the_per_sku_pool_limit_holds_under_a_queue_of_runs(dev: Dev) -> None:
    client = graphql_client(dev.server.url)
    h200, h200_ladder = dev.cells("qwen3.827b-fp8-h200-vllm-mtp")
    mi325x, mi325x_ladder = dev.cells("qwen3.827b-bf16-mi325x-vllm-mtp")
    instance = local_instance(dev.settings.dagster_home)
    try:
        add_images(instance, [h200[0], mi325x[0]])
    finally:
        instance.dispose()
    config = _launcher_config(0.2)  # runs of several seconds, so overlaps are visible
    runs = []
    for cells, ladder in ((h200, h200_ladder), (mi325x, mi325x_ladder)):
        for pair in (cells[2:4], cells[4:6]):
            runs += submit_cells(
                client, pair, ladder, reason="pool-test", config=config, sweep=SMALL
            )
    statuses = _wait(client, [run.run_id for run in runs])
    assert set(statuses.values()) == {dg.DagsterRunStatus.SUCCESS}
    instance = local_instance(dev.settings.dagster_home)
    try:
        records = {r.dagster_run.run_id: r for r in instance.get_run_records()}
    finally:
        instance.dispose()
    spans: dict[str, list[tuple[float, float]]] = {}
    for run in runs:
        record = records[run.run_id]
        assert record.start_time is not None and record.end_time is not None
        spans.setdefault(run.cells.sku, []).append((record.start_time, record.end_time))
    for sku, pairs in spans.items():
        (_, first_end), (second_start, _) = sorted(pairs)
        assert first_end <= second_start, f"two {sku} runs overlapped under a pool limit of 1"
    overlapping = any(
        h_start < m_end and m_start < h_end
        for h_start, h_end in spans["h200"]
        for m_start, m_end in spans["mi325x"]
    )
    assert overlapping, f"runs of different SKUs never overlapped: {spans}"


def _ui(tmp_path: Path, port: int, preexec_fn: Any = None) -> tuple[subprocess.Popen[bytes], Path]:
    """``inferx dagster ui`` in its own session, state under ``tmp_path``; its output log."""
    log = tmp_path / "ui.log"
    inferx = Path(sys.executable).with_name("inferx")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(inferx), "dagster", "ui", "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "INFERX_STATE_DIR": str(tmp_path / "state")},
            start_new_session=True,
            preexec_fn=preexec_fn,
        )
    return proc, log


def test_inferx_dagster_ui_started_in_the_background_stops_on_sigterm(tmp_path: Path) -> None:
    # As a script starts it: its own session, SIGINT ignored (the dagster dev trap).
    port = _free_port()
    proc, log = _ui(tmp_path, port, lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        deadline = time.monotonic() + READY_DEADLINE_S
        while b"Dagster UI: " not in log.read_bytes():
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)  # polling the command's output, under a deadline
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert "stopping dagster dev" in log.read_text()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_ctrl_c_while_the_ui_starts_stops_it_cleanly(tmp_path: Path) -> None:
    # Ctrl-C reaches the command's group as soon as dagster dev has been spawned, before
    # its webserver answers: the command exits 0 and leaves no dagster process behind.
    state = tmp_path / "state"
    proc, log = _ui(tmp_path, _free_port())
    try:
        deadline = time.monotonic() + READY_DEADLINE_S
        while not (state / "logs" / "dagster-dev.log").exists():
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)  # polling for the spawned server's log, under a deadline
        assert b"Dagster UI: " not in log.read_bytes()  # still starting
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(60) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert "stopping dagster dev" in log.read_text()
    assert "Aborted" not in log.read_text()
    assert _processes_naming(state) == []


def _processes_naming(path: Path) -> list[int]:
    """PIDs of the live processes whose command line names ``path``."""
    found = []
    for process in psutil.process_iter(["pid", "cmdline", "status"]):
        cmdline = " ".join(process.info["cmdline"] or [])
        if str(path) in cmdline and process.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(process.info["pid"])
    return found


UI_IMAGE = "vllm/vllm-openai:nightly-ui-test"
FRESH = (  # flow YAML: typed into the config editor in one go (no auto-indent)
    '{"ops": {"sweep__h200": {"config": {"seed": 7, "num_prompts": 1, "max_turns": 1}}}, '
    '"resources": {"launcher": {"config": {"time_scale": 0.02, "load_time_s": 0}}}}'
)
UI_TIMEOUT_MS = 120_000


def _asset_page(page: Any, url: str, sku: str) -> None:
    """Open ``sku``'s sweep asset page."""
    page.goto(f"{url}/assets/sweep/{sku}", wait_until="networkidle")
    page.get_by_role("button", name="Materialize…").wait_for(timeout=UI_TIMEOUT_MS)


def _pick(page: Any, dialog: Any, value: str) -> None:
    """Choose ``value`` in the first partition picker of the launch dialog still empty."""
    dialog.get_by_text("Select a partition or create one").first.click()
    menu = page.locator("[data-radix-popper-content-wrapper]")
    menu.get_by_text(value, exact=True).first.click()
    dialog.get_by_text("Launch runs to materialize").click()  # closes the picker only


def _latest(instance: dg.DagsterInstance, cell: Cell) -> Any:
    key = str(cell_key(cell))
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(["sweep", cell.sku]), asset_partitions=[key]),
        limit=1,
    ).records
    return records[0] if records else None


def _wait_for_new(dev: Dev, cell: Cell, after: int) -> Any:
    deadline = time.monotonic() + RUN_DEADLINE_S
    while time.monotonic() < deadline:
        instance = local_instance(dev.settings.dagster_home)
        try:
            record = _latest(instance, cell)
        finally:
            instance.dispose()
        if record is not None and record.storage_id > after:
            return record
        time.sleep(0.5)  # polling the instance for the UI's run, under a deadline
    raise AssertionError(f"no new materialization of {cell} within {RUN_DEADLINE_S:.0f} s")


RUN_AND_JOBS = """
query($runId: ID!) {
  runOrError(runId: $runId) {
    ... on Run {
      pipelineName pipelineSnapshotId parentPipelineSnapshotId
      repositoryOrigin { repositoryLocationName }
    }
  }
  workspaceOrError {
    ... on Workspace {
      locationEntries {
        name
        locationOrLoadError {
          ... on RepositoryLocation { repositories { pipelines { name pipelineSnapshotId } } }
        }
      }
    }
  }
}
"""


def _same_job_version(url: str, run_id: str) -> None:
    """What the UI checks before re-execution: the run's location, and its job's snapshot
    among the location's jobs now (else it warns of "a different version")."""
    data = graphql(url, RUN_AND_JOBS, {"runId": run_id})
    run = data["runOrError"]
    assert run["repositoryOrigin"]["repositoryLocationName"] == "inferx"
    (entry,) = data["workspaceOrError"]["locationEntries"]
    jobs = {
        job["name"]: job["pipelineSnapshotId"]
        for repository in entry["locationOrLoadError"]["repositories"]
        for job in repository["pipelines"]
    }
    wanted = run["parentPipelineSnapshotId"] or run["pipelineSnapshotId"]
    assert jobs.get(run["pipelineName"]) == wanted, (run, jobs)


@pytest.mark.chromium
def test_a_benchmark_engineer_in_the_ui(dev: Dev, chromium_browser: Any, tmp_path: Path) -> None:
    """Materialize one cell with fresh options (measured, not reused), add an H200 image
    (absent from the other SKU), preview each sensor with an empty cursor; screenshots
    stay under the test's output."""
    client = graphql_client(dev.server.url)
    cells, ladder = dev.cells("qwen3.827b-fp8-h200-vllm-mtp")
    cell = cells[3]
    instance = local_instance(dev.settings.dagster_home)
    try:
        add_images(instance, [cell])
    finally:
        instance.dispose()
    (first,) = submit_cells(
        client, [cell], ladder, reason="ui-test", config=_launcher_config(0.02), sweep=SMALL
    )
    assert _wait(client, [first.run_id]) == {first.run_id: dg.DagsterRunStatus.SUCCESS}
    before = _wait_for_new(dev, cell, -1)
    page = chromium_browser.new_page(viewport={"width": 1600, "height": 1000})
    try:
        _asset_page(page, dev.server.url, "h200")
        # A first visit opens Dagster's community dialog over the page: skip it.
        page.get_by_role("button", name="Skip").click(timeout=UI_TIMEOUT_MS)
        page.get_by_role("button", name="Materialize…").click()
        dialog = page.locator("[role=dialog]").filter(has_text="Partition selection")
        _pick(page, dialog, str(cell.conc))
        _pick(page, dialog, image_key(cell.image))  # the short key the UI lists
        dialog.get_by_text("Config", exact=True).click()
        dialog.get_by_role("button", name="Add config").click()
        editor = page.locator("[role=dialog]").filter(has_text="Config Editor")
        editor.locator(".CodeMirror").click()
        page.keyboard.insert_text(FRESH)
        editor.get_by_role("button", name="Save config").click()
        page.screenshot(path=str(tmp_path / "1-launch.png"))
        dialog.get_by_role("button", name=re.compile("^Launch")).click()
        fresh = _wait_for_new(dev, cell, before.storage_id)
        shown = fresh.asset_materialization.metadata
        assert shown["reused"].value is False and shown["tok/s/GPU"].value > 0
        _same_job_version(dev.server.url, fresh.run_id)
        assert shown["image"].value == cell.image  # the key resolved to the full reference
        _asset_page(page, dev.server.url, "h200")
        page.get_by_text("tok/s/GPU").first.wait_for(timeout=UI_TIMEOUT_MS)
        page.screenshot(path=str(tmp_path / "2-measured.png"), full_page=True)

        page.get_by_role("button", name="Materialize…").click()
        dialog.get_by_text("Add a partition").click()
        adder = page.locator("[role=dialog]").filter(has_text="Add a partition for images_h200")
        adder.locator("input").fill(UI_IMAGE)
        adder.get_by_role("button", name="Save").click()
        adder.wait_for(state="detached", timeout=UI_TIMEOUT_MS)
        page.screenshot(path=str(tmp_path / "3-added.png"))
        instance = local_instance(dev.settings.dagster_home)
        try:
            assert UI_IMAGE in instance.get_dynamic_partitions("images_h200")
            assert UI_IMAGE not in instance.get_dynamic_partitions("images_mi325x")
        finally:
            instance.dispose()
        _asset_page(page, dev.server.url, "mi325x")
        page.get_by_role("button", name="Materialize…").click()
        dialog.get_by_text("Select a partition or create one").last.click()
        menu = page.locator("[data-radix-popper-content-wrapper]")
        menu.get_by_text("vllm-openai-rocm:", exact=False).first.wait_for()  # its short keys
        assert UI_IMAGE not in menu.inner_text()
        page.screenshot(path=str(tmp_path / "4-mi325x-images.png"))

        for sensor in ("new_image_tags", "golden_curve_changes", "merged_recipe_changes"):
            page.goto(f"{dev.server.url}/locations/inferx/sensors/{sensor}")
            page.get_by_role("button", name="Preview tick result").click(timeout=UI_TIMEOUT_MS)
            preview = page.locator("[role=dialog]").filter(has_text="Preview tick result")
            assert preview.locator("input").input_value() == ""
            preview.get_by_role("button", name="Continue").click()
            preview.get_by_role("button", name="Continue").wait_for(
                state="detached", timeout=UI_TIMEOUT_MS
            )
            page.get_by_text("Evaluating sensor").wait_for(state="detached", timeout=UI_TIMEOUT_MS)
            page.screenshot(path=str(tmp_path / f"5-preview-{sensor}.png"))
            text = page.locator("[role=dialog]").last.inner_text()
            assert "Result" in text and "JSONDecodeError" not in text, text
            assert "Skipped" in text or "Requested" in text, text  # a reason, not an empty result
            assert "empty result" not in text, text
    except Exception:
        page.screenshot(path=str(tmp_path / "failed.png"), full_page=True)
        raise
    finally:
        page.close()
    assert len(list(tmp_path.glob("*.png"))) == 7
