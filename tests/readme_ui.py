"""What a newcomer sees in the Dagster UI right after ``scripts/demo``: the checks of
tests/test_readme.py, in headless Chromium and in the GraphQL the UI itself asks.

Each check takes the UI's URL and saves its screenshots under a folder.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tests.defs.graphql import graphql

LOCATION = "inferx"
REPOSITORY = {"repositoryLocationName": LOCATION, "repositoryName": "__repository__"}
UI_TIMEOUT_MS = 120_000
DIALOG_TIMEOUT_MS = 15_000
SETTLE_DEADLINE_S = 300.0
# The sweep's knobs: one place each, the sweep op's config (not the launcher resource).
KNOBS = ("force", "prompts_per_conc", "seed", "warmup_prompts")
CELL_METADATA = ("prompts_per_conc", "num_prompts", "validity_policy", "launcher")
AUTOMATION_SENSOR = "materialize_missing_upstream"
# What a preview shows instead of a reason: an empty result, or an error with no detail.
_NO_REASON = ("empty result", "SensorExecutionError", "JSONDecodeError")
_UNFINISHED = ["QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING"]

TICKS = """
query($selector: SensorSelector!) {
  sensorOrError(sensorSelector: $selector) {
    __typename
    ... on Sensor { sensorState { ticks(limit: 5) { status error { message } } } }
  }
}
"""
UPSTREAM_ASSETS = ("recipes", "golden_curves", "sweep_matrix")
UPSTREAM = "{ assetNodes { assetKey { path } assetMaterializations(limit: 1) { timestamp } } }"
ACTIVE_RUNS = """
query($statuses: [RunStatus!]) {
  runsOrError(filter: {statuses: $statuses}) { ... on Runs { results { runId } } }
}
"""
SENSORS = """
query($selector: RepositorySelector!) {
  sensorsOrError(repositorySelector: $selector) {
    ... on Sensors { results { name sensorType } }
  }
}
"""
PARTITIONS = """
query($key: AssetKeyInput!) {
  assetNodeOrError(assetKey: $key) {
    ... on AssetNode { partitionKeys partitionKeysByDimension { name partitionKeys } }
  }
}
"""
STALE = """
query($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) { ... on AssetNode { FIELDS } } }
"""
CONFIG_SCHEMA = """
query($selector: PipelineSelector!) {
  runConfigSchemaOrError(selector: $selector) {
    __typename
    ... on RunConfigSchema {
      rootConfigType { key }
      allConfigTypes {
        key typeParamKeys
        ... on CompositeConfigType { fields { name configTypeKey } }
      }
    }
  }
}
"""


def settle(url: str) -> None:
    """Wait until the automation sensor's assets (the sweeps' upstream) are materialized,
    by the demo or by the sensor on first open (which once turned every cell Unsynced),
    and no run is unfinished; fail on a failed tick, with its error."""
    deadline = time.monotonic() + SETTLE_DEADLINE_S
    selector = {**REPOSITORY, "sensorName": AUTOMATION_SENSOR}
    while True:
        sensor = graphql(url, TICKS, {"selector": selector})["sensorOrError"]
        assert sensor["__typename"] == "Sensor", sensor
        ticks = sensor["sensorState"]["ticks"]
        assert all(t["status"] != "FAILURE" for t in ticks), ticks
        nodes = graphql(url, UPSTREAM)["assetNodes"]
        missing = [n["assetKey"]["path"] for n in nodes if not n["assetMaterializations"]]
        missing = [path for path in missing if path[0] in UPSTREAM_ASSETS]
        runs = graphql(url, ACTIVE_RUNS, {"statuses": _UNFINISHED})["runsOrError"]["results"]
        if not missing and not runs:
            return
        assert time.monotonic() < deadline, f"{AUTOMATION_SENSOR} left {missing}: {ticks}"
        time.sleep(1.0)  # polling the webserver for materializations and runs, under a deadline


def _open(page: Any, url: str, shot: Path, wait_for: str) -> str:
    """Open ``url``, wait for ``wait_for`` and the network to settle; the page's text."""
    page.goto(url, wait_until="networkidle")
    page.get_by_text(wait_for).first.wait_for(timeout=UI_TIMEOUT_MS)
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(shot), full_page=True)
    text: str = page.locator("body").inner_text()
    return text


def first_visit(page: Any, url: str) -> None:
    """Open the UI and skip Dagster's community dialog, which an instance shows once."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.goto(f"{url}/assets", wait_until="networkidle")
    skip = page.get_by_role("button", name="Skip")
    try:
        skip.wait_for(timeout=DIALOG_TIMEOUT_MS)
    except PlaywrightTimeout:
        return  # this instance has shown it before
    skip.click()


def _stale_statuses(url: str, sku: str) -> dict[str, str]:
    """Each partition of ``sku``'s sweep asset and its stale status, as the UI asks for it
    (FRESH, STALE: shown "Unsynced", MISSING: never materialized)."""
    key = {"key": {"path": ["sweep", sku]}}
    partitions = graphql(url, PARTITIONS, key)["assetNodeOrError"]["partitionKeys"]
    fields = " ".join(
        f"p{index}: staleStatus(partition: {json.dumps(partition)})"
        for index, partition in enumerate(partitions)
    )
    query = STALE.replace("FIELDS", fields)
    answer = graphql(url, query, key)["assetNodeOrError"]
    return {partition: answer[f"p{index}"] for index, partition in enumerate(partitions)}


def no_unsynced(page: Any, url: str, skus: Iterable[str], shots: Path) -> None:
    """No materialized cell of a sweep is stale ("Unsynced"): the partition page of each
    SKU's first cell in the browser, and every partition's status as the UI reads it."""
    for sku in skus:
        statuses = _stale_statuses(url, sku)
        materialized = [key for key, status in statuses.items() if status != "MISSING"]
        if materialized:
            query = urllib.parse.urlencode({"view": "partitions", "partition": materialized[0]})
            shot = shots / f"unsynced-{sku}.png"
            text = _open(page, f"{url}/assets/sweep/{sku}?{query}", shot, "tok/s/GPU")
            assert "Unsynced" not in text, f"sweep/{sku} {materialized[0]}: Unsynced ({shot})"
        stale = sorted(key for key, status in statuses.items() if status == "STALE")
        assert not stale, f"sweep/{sku}: Unsynced cells {stale}"


def _dimensions(url: str, sku: str) -> dict[str, list[str]]:
    node = graphql(url, PARTITIONS, {"key": {"path": ["sweep", sku]}})["assetNodeOrError"]
    return {d["name"]: d["partitionKeys"] for d in node["partitionKeysByDimension"]}


def image_partitions(url: str, sku: str) -> set[str]:
    """The image keys the UI offers for ``sku``'s sweep asset."""
    return set(_dimensions(url, sku)["image"])


def cell_metadata(page: Any, url: str, sku: str, shots: Path) -> None:
    """The asset page of ``sku``'s sweep shows how big its latest cell's point was."""
    text = _open(page, f"{url}/assets/sweep/{sku}", shots / f"cell-{sku}.png", "tok/s/GPU")
    missing = [key for key in CELL_METADATA if key not in text]
    assert not missing, f"sweep/{sku}'s page lacks {missing}:\n{text}"


def sensor_previews(page: Any, url: str, shots: Path) -> None:
    """Every sensor's "Preview tick result" (empty cursor) says why: a skip reason or the
    run requests, never an empty result or an error (run-status sensors have no preview)."""
    sensors = graphql(url, SENSORS, {"selector": REPOSITORY})["sensorsOrError"]["results"]
    # Dagster offers no preview of a run-status sensor (it needs a run that just ended).
    names = sorted(s["name"] for s in sensors if s["sensorType"] != "RUN_STATUS")
    assert AUTOMATION_SENSOR in names, names
    silent = {}
    for name in names:
        page.goto(f"{url}/locations/{LOCATION}/sensors/{name}", wait_until="networkidle")
        button = page.get_by_role("button", name="Preview tick result")
        button.wait_for(timeout=UI_TIMEOUT_MS)
        if name == AUTOMATION_SENSOR:
            # Dagster 1.13 has no preview of an automation sensor (the button is disabled);
            # its page must say where its evaluations are (`settle` read its ticks).
            if "tick history" not in page.locator("body").inner_text():
                silent[name] = "no word on where its evaluations are"
            continue
        if not button.is_enabled():
            silent[name] = "Preview tick result is disabled"
            continue
        button.click()
        preview = page.locator("[role=dialog]").filter(has_text="Preview tick result")
        preview.get_by_role("button", name="Continue").click()
        preview.get_by_role("button", name="Continue").wait_for(
            state="detached", timeout=UI_TIMEOUT_MS
        )
        page.get_by_text("Evaluating sensor").wait_for(state="detached", timeout=UI_TIMEOUT_MS)
        page.screenshot(path=str(shots / f"preview-{name}.png"))
        text = page.locator("[role=dialog]").last.inner_text()
        reason = "Skipped" in text or "Requested" in text
        if not reason or any(word in text for word in _NO_REASON):
            silent[name] = text
    assert not silent, f"sensor previews without a reason: {silent}"


def _paths(types: dict[str, dict[str, Any]], key: str, at: tuple[str, ...]) -> Iterable[str]:
    """Every field path below config type ``key`` (field names joined by dots)."""
    kind = types[key]
    for child in kind.get("typeParamKeys") or ():
        yield from _paths(types, child, at)
    for field in kind.get("fields") or ():
        path = (*at, field["name"])
        yield ".".join(path)
        yield from _paths(types, field["configTypeKey"], path)


def one_place_per_knob(page: Any, url: str, sku: str, job: str, shots: Path) -> None:
    """The launchpad of ``sku``'s sweep job offers each knob once: in the sweep op's config."""
    selector = {**REPOSITORY, "pipelineName": job}
    schema = graphql(url, CONFIG_SCHEMA, {"selector": selector})["runConfigSchemaOrError"]
    assert schema["__typename"] == "RunConfigSchema", schema
    types = {t["key"]: t for t in schema["allConfigTypes"]}
    paths = list(_paths(types, schema["rootConfigType"]["key"], ()))
    op = f"ops.sweep__{sku}.config"
    for knob in KNOBS:
        places = [path for path in paths if path.rsplit(".", 1)[-1] == knob]
        assert places == [f"{op}.{knob}"], f"{knob}: offered at {places}"
    _open(page, f"{url}/locations/{LOCATION}/jobs/{job}/playground", shots / "launchpad.png", job)
