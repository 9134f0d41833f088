"""The Dagster UI and the change sensors over InferenceX's full sweep (issue 23).

The full sweep is InferenceX's master configurations imported as recipes (``inferx
import-inferencex masters``: 208 recipes, about 2,078 jobs on ten SKUs), each recipe
following its repository's ``nightly-*`` tags (``engine.track``), as a maintainer sets a
sweep up to follow nightlies. The project runs under ``INFERX_RECIPE_CHECKS=parity``
(InferenceX's own rules): under ``enforce`` some imported recipes fail the pre-GPU rules
and InferenceX runs some jobs twice; the benchmark first says whether the code location
still loads that way.

Each SKU's image partitions hold its recipes' pinned images plus ``EXTRA_IMAGES`` nightly
tags of its most used repository (what a nightly backfill over months leaves), and each
pinned cell has one materialization (a plain sweep measured once), reported runless.

- UI: a real ``dagster dev`` (webserver, daemon, code server) on a temporary
  ``DAGSTER_HOME``, driven by headless Debian Chromium through Playwright (as
  ``tests/services/chromium.py``). Per SKU, each sweep asset's page (``/assets/sweep/<sku>``)
  and its partitions tab, each opened in a new browser context (cold: no cache, as a
  link opened from a chat), the tab also reloaded in the same context (warm); timed from
  navigation until the page shows its data (a DOM condition under a deadline: the asset's
  job link; the partition count, the materialized count and the first image key).
  Target: under 3 s. The same for the repository's own ``recipes/`` (the baseline,
  measured in the same run, its own ``dagster dev``), so the figure reads as a ratio.
- Sensors: each change sensor's tick over the full sweep with ``EXTRA_IMAGES`` more tags
  in every tracked repository of an in-memory registry (and the image partitions above):
  a new tag, an edited golden curve, one merged commit, and each with nothing new; plus
  ``fail_dead_runs``. Target: under 2 s per tick, against loading the matrix once (the
  baseline).

    .venv/bin/python benchmarks/ui_sensors.py
"""

from __future__ import annotations

import math
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from unittest import mock

import dagster as dg
import yaml
from pipeline_overhead import git, sensor_tick  # benchmarks/pipeline_overhead.py

from inferx_pipeline.defs.assets import sweep_key
from inferx_pipeline.defs.definitions import build_definitions, sku_ladders
from inferx_pipeline.defs.devserver import DagsterDev
from inferx_pipeline.defs.execute import local_instance, prepare_instance, workspace_file
from inferx_pipeline.defs.jobs import sweep_job_name
from inferx_pipeline.defs.partitions import add_images, cell_key, images_name
from inferx_pipeline.defs.resources import RecipeRepoResource
from inferx_pipeline.errors import InferxError
from inferx_pipeline.images.fake import FakeRegistry
from inferx_pipeline.images.refs import ImageRef
from inferx_pipeline.images.registry import Registries
from inferx_pipeline.matrix.changes import affected_recipes
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.partitions import Cell, pinned_cells
from inferx_pipeline.plan.build import MatrixRequest, load_matrix
from inferx_pipeline.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
MASTERS = ROOT / "third_party" / "inferencex" / "configs"
EXTRA_IMAGES = 300
TRACK = "nightly-*"
UI_TARGET_S = 3.0
TICK_TARGET_S = 2.0
READY_DEADLINE_S = 300.0
# How long a page may take to show its data before it counts as not rendered at all.
RENDER_DEADLINE_MS = 60_000
DIALOG_DEADLINE_MS = 15_000
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
VIEWPORT = {"width": 1600, "height": 1000}


@dataclass(frozen=True)
class Project:
    """A project the UI serves: its settings, and each SKU's partitions as registered."""

    label: str
    settings: Settings
    env: dict[str, str]
    partitions: dict[str, int]
    materialized: dict[str, int]
    first_image: dict[str, str]


def _timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def _verdict(seconds: float, target: float) -> str:
    met = "met" if seconds < target else "NOT met"
    return f"{seconds / target:.2f} of the {target:.0f} s target, {met}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(settings: Settings) -> dict[str, str]:
    """The ``INFERX_*`` variables a code server needs to load ``settings``' project."""
    return {
        "INFERX_ROOT": str(settings.root),
        "INFERX_STATE_DIR": str(settings.state),
        "INFERX_RECIPE_CHECKS": settings.recipe_checks,
    }


def _import_masters(root: Path) -> Path:
    """A project root: the checkout's catalog and curves, InferenceX's masters as recipes,
    each following its repository's ``TRACK`` tags."""
    shutil.copytree(ROOT / "catalog", root / "catalog")
    shutil.copytree(ROOT / "golden_al_distribution", root / "golden_al_distribution")
    inferx = Path(sys.executable).with_name("inferx")
    masters = [str(MASTERS / "amd-master.yaml"), str(MASTERS / "nvidia-master.yaml")]
    subprocess.run(
        [str(inferx), "import-inferencex", "masters", *masters, "--out", str(root / "recipes")],
        check=True,
        capture_output=True,
    )
    for path in sorted((root / "recipes").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        doc["engine"]["track"] = {"tags": [TRACK]}
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return root


def _enforce_load(root: Path, state: Path) -> str:
    """Whether the code location loads over ``root`` under the default recipe checks."""
    settings = Settings(root=root, state_dir=state, recipe_checks="enforce")
    try:
        defs = build_definitions(settings)
    except InferxError as err:
        return f"does NOT load: {type(err).__name__}: {str(err)[:300]}"
    return f"loads ({len(list(defs.assets or ()))} assets)"


def _nightlies(image: str) -> list[str]:
    ref = ImageRef.parse(image)
    return [ref.with_tag(f"nightly-{index:03d}") for index in range(EXTRA_IMAGES)]


def _register(label: str, settings: Settings, extra: int) -> Project:
    """Create the instance, register each SKU's pinned images (plus ``extra`` nightly
    tags of its most used repository) and one materialization per pinned cell."""
    jobs = load_matrix(MatrixRequest(paths=()), settings).jobs
    ladder = sku_ladders(settings)
    prepare_instance(settings.dagster_home, ladder, None, os.environ)
    workspace_file(settings.dagster_home)
    instance = local_instance(settings.dagster_home)
    try:
        pinned = pinned_cells(job for job in jobs if job.sku in ladder)
        cells: list[Cell] = sorted(pinned, key=str)
        if extra:
            for sku, concs in ladder.items():
                used = Counter(job.engine.image for job in jobs if job.sku == sku)
                top = used.most_common(1)[0][0]
                cells += [Cell(sku=sku, conc=concs[0], image=i) for i in _nightlies(top)[:extra]]
        started = time.perf_counter()
        add_images(instance, cells)
        added_s = time.perf_counter() - started
        started = time.perf_counter()
        for cell in sorted(pinned, key=str):
            event = dg.AssetMaterialization(
                asset_key=sweep_key(cell.sku), partition=str(cell_key(cell))
            )
            instance.report_runless_asset_event(event)
        reported_s = time.perf_counter() - started
        images = {sku: instance.get_dynamic_partitions(images_name(sku)) for sku in ladder}
    finally:
        instance.dispose()
    keys = {sku: {str(cell_key(cell)) for cell in pinned if cell.sku == sku} for sku in ladder}
    project = Project(
        label=label,
        settings=settings,
        env=_env(settings),
        partitions={sku: len(ladder[sku]) * len(images[sku]) for sku in ladder},
        materialized={sku: len(keys[sku]) for sku in ladder},
        first_image={sku: images[sku][0] for sku in ladder},
    )
    print(
        f"{label}: {len(jobs)} jobs, {len(ladder)} SKUs, "
        f"{sum(len(i) for i in images.values())} image partitions registered in {added_s:.2f} s, "
        f"{sum(project.partitions.values())} partitions, {len(pinned)} materializations "
        f"reported in {reported_s:.2f} s"
    )
    return project


# ---------------------------------------------------------------------------------------
# UI


def _skip_dialog(browser: Any, url: str) -> None:
    """Dismiss Dagster's community dialog, which an instance shows once."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        page.goto(
            f"{url}/runs", wait_until="networkidle"
        )  # no asset status read before the timed pages
        skip = page.get_by_role("button", name="Skip")
        try:
            skip.wait_for(timeout=DIALOG_DEADLINE_MS)
            skip.click()
        except PlaywrightTimeout:
            pass  # this instance has shown it before
    finally:
        context.close()


def _overview_shown(page: Any, project: Project, sku: str) -> None:
    page.get_by_text("Latest materialization").first.wait_for(timeout=RENDER_DEADLINE_MS)
    page.get_by_text(sweep_job_name(sku), exact=True).first.wait_for(timeout=RENDER_DEADLINE_MS)


def _grid_shown(page: Any, project: Project, sku: str) -> None:
    total = project.partitions[sku]
    done = project.materialized[sku]
    page.get_by_text(f"{total:,} Partitions Selected").first.wait_for(timeout=RENDER_DEADLINE_MS)
    counted = re.compile(rf"^Materialized \(({done}|{done:,})\)$")
    page.get_by_text(counted).first.wait_for(timeout=RENDER_DEADLINE_MS)
    # Attached, not visible: the grid shows a long key middle-truncated, in full only in
    # a hidden element it measures with.
    key = project.first_image[sku]
    page.get_by_text(key, exact=True).first.wait_for(state="attached", timeout=RENDER_DEADLINE_MS)


def _load(page: Any, url: str, shown: Callable[[Any], None]) -> float:
    """Seconds from navigating ``page`` to ``url`` until ``shown(page)`` returns; infinite
    when it is not shown within ``RENDER_DEADLINE_MS``."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    started = time.perf_counter()
    page.goto(url, wait_until="commit")
    try:
        shown(page)
    except PlaywrightTimeout:
        return math.inf
    return time.perf_counter() - started


def _pages(browser: Any, url: str, project: Project) -> dict[str, tuple[float, float, float]]:
    """Per SKU: (asset page cold, partitions tab cold, partitions tab warm) seconds."""
    timings = {}
    for sku in project.partitions:
        asset = f"{url}/assets/sweep/{sku}"
        context = browser.new_context(viewport=VIEWPORT)
        try:
            page = context.new_page()
            overview = _load(page, asset, partial(_overview_shown, project=project, sku=sku))
        finally:
            context.close()
        context = browser.new_context(viewport=VIEWPORT)
        try:
            page = context.new_page()
            grid = f"{asset}?view=partitions"
            cold = _load(page, grid, partial(_grid_shown, project=project, sku=sku))
            page.wait_for_load_state("networkidle")
            warm = _load(page, grid, partial(_grid_shown, project=project, sku=sku))
        finally:
            context.close()
        timings[sku] = (overview, cold, warm)
    return timings


def _ui(
    browser: Any, project: Project, work: Path
) -> tuple[float, dict[str, tuple[float, float, float]]]:
    """``dagster dev`` over ``project``: seconds until it serves, and its pages' timings."""
    home = project.settings.dagster_home
    server = DagsterDev(
        workspace_file(home),
        home,
        port=_free_port(),
        log=work / f"dagster-dev-{project.label}.log",
        env={**os.environ, **project.env},
    )
    started = time.perf_counter()
    with server:
        server.wait_ready(READY_DEADLINE_S)
        served = time.perf_counter() - started
        _skip_dialog(browser, server.url)
        return served, _pages(browser, server.url, project)


def _print_pages(project: Project, served: float, pages: Mapping[str, tuple[float, ...]]) -> None:
    print(f"{project.label}: dagster dev served the UI after {served:.1f} s")
    print(
        f"  {'SKU':<11} {'partitions':>10} {'asset page':>11} {'grid cold':>10} {'grid warm':>10}"
    )
    for sku, (overview, cold, warm) in pages.items():
        print(
            f"  {sku:<11} {project.partitions[sku]:>10,} {overview:>9.2f} s {cold:>8.2f} s "
            f"{warm:>8.2f} s"
        )


# ---------------------------------------------------------------------------------------
# Sensors


def _registry(jobs: Sequence[BenchmarkJob]) -> tuple[FakeRegistry, Registries, str]:
    """Every repository the recipes pin, with its pinned tags and ``EXTRA_IMAGES`` nightly
    tags; the registries serving it; the most used repository (the one that gets a tag)."""
    registry = FakeRegistry()
    refs = [ImageRef.parse(job.engine.image) for job in jobs]
    for ref in refs:
        if ref.tag is not None:
            registry.push(ref.repository, ref.tag)
        for index in range(EXTRA_IMAGES):
            registry.push(ref.repository, f"nightly-{index:03d}")
    hosts = {ref.registry for ref in refs}
    busiest = Counter(ref.repository for ref in refs).most_common(1)[0][0]
    return registry, Registries(clients=dict.fromkeys(hosts, registry)), busiest


def _busiest_curve(settings: Settings, jobs: Sequence[BenchmarkJob]) -> Path:
    """The golden curve file whose change reruns the most recipes (the first on a tie)."""
    loaded = load_matrix(MatrixRequest(paths=()), settings).recipes.recipes
    curves = sorted(settings.golden_dir.glob("*.yaml"))
    return max(curves, key=lambda c: len(affected_recipes([c], loaded, settings.golden_dir)))


def _ticks(project: Project, work: Path) -> tuple[float, dict[str, tuple[float, int]]]:
    """The matrix load (baseline) and each tick's (seconds, run requests)."""
    settings = project.settings
    matrix_s = min(_timed(lambda: load_matrix(MatrixRequest(paths=()), settings)) for _ in range(3))
    jobs = load_matrix(MatrixRequest(paths=()), settings).jobs
    registry, registries, busiest = _registry(jobs)
    repo = work / "git"
    shutil.copytree(settings.root, repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the imported masters")
    defs = build_definitions(
        settings,
        resources={"registries": registries, "recipes_repo": RecipeRepoResource(source=str(repo))},
    )
    timings: dict[str, tuple[float, int]] = {}
    instance = local_instance(settings.dagster_home)
    try:
        seconds, cursor, runs = sensor_tick(defs, "new_image_tags", instance, None)
        timings[f"new_image_tags, first look ({EXTRA_IMAGES}+ tags a repository)"] = (seconds, runs)
        seconds, _, runs = sensor_tick(defs, "new_image_tags", instance, cursor)
        timings["new_image_tags, nothing new"] = (seconds, runs)
        registry.push(busiest, f"nightly-{EXTRA_IMAGES:03d}")
        seconds, _, runs = sensor_tick(defs, "new_image_tags", instance, cursor)
        timings[f"new_image_tags, a new {busiest} tag"] = (seconds, runs)

        seconds, cursor, runs = sensor_tick(defs, "golden_curve_changes", instance, None)
        timings["golden_curve_changes, first look"] = (seconds, runs)
        curve = _busiest_curve(settings, jobs)
        curve.write_text(curve.read_text() + "\n# edited\n")
        seconds, _, runs = sensor_tick(defs, "golden_curve_changes", instance, cursor)
        timings[f"golden_curve_changes, {curve.stem} edited"] = (seconds, runs)

        seconds, cursor, runs = sensor_tick(defs, "merged_recipe_changes", instance, None)
        timings["merged_recipe_changes, first look"] = (seconds, runs)
        seconds, _, runs = sensor_tick(defs, "merged_recipe_changes", instance, cursor)
        timings["merged_recipe_changes, nothing new"] = (seconds, runs)
        recipe = Counter(job.recipe_id for job in jobs).most_common(1)[0][0]
        changed = repo / "recipes" / f"{recipe}.yaml"
        changed.write_text(changed.read_text().replace("master config", "master config, tuned"))
        git(repo, "commit", "-q", "-am", f"tune {recipe}")
        seconds, _, runs = sensor_tick(defs, "merged_recipe_changes", instance, cursor)
        timings[f"merged_recipe_changes, {recipe} changed"] = (seconds, runs)

        seconds, _, runs = sensor_tick(defs, "fail_dead_runs", instance, None)
        timings["fail_dead_runs"] = (seconds, runs)
    finally:
        instance.dispose()
    return matrix_s, timings


def main() -> None:
    """Build both projects, time the sensors' ticks, then each project's UI pages."""
    warnings.filterwarnings("ignore", category=dg.BetaWarning)
    warnings.filterwarnings("ignore", category=dg.PreviewWarning)
    from playwright.sync_api import sync_playwright

    assert CHROMIUM.exists(), f"{CHROMIUM} missing: scripts/system-deps installs chromium"
    with tempfile.TemporaryDirectory(prefix="inferx-ui-sensors-") as tmp:
        work = Path(tmp)
        root = _import_masters(work / "full")
        print(
            f"code location over the imported masters, INFERX_RECIPE_CHECKS=enforce: "
            f"{_enforce_load(root, work / 'enforce-state')}"
        )
        full_settings = Settings(root=root, state_dir=work / "full-state", recipe_checks="parity")
        small_settings = Settings(
            root=ROOT, state_dir=work / "small-state", recipe_checks="enforce"
        )
        with mock.patch.dict(os.environ, _env(small_settings)):
            small = _register("baseline (the repository's recipes/)", small_settings, 0)
        with mock.patch.dict(os.environ, _env(full_settings)):
            full = _register("full sweep (parity)", full_settings, EXTRA_IMAGES)
            matrix_s, ticks = _ticks(full, work)
        print(f"\nsensor ticks over the full sweep; baseline: the matrix load {matrix_s:.3f} s")
        for name, (seconds, runs) in ticks.items():
            print(
                f"  {name:<62} {seconds:6.3f} s ({seconds / matrix_s:4.1f}x the matrix load, "
                f"{runs} run requests; {_verdict(seconds, TICK_TARGET_S)})"
            )
        worst_tick = max(seconds for seconds, _ in ticks.values())
        print(f"  slowest tick {worst_tick:.3f} s: {_verdict(worst_tick, TICK_TARGET_S)}")

        print("\nUI pages (headless Chromium; cold = a new browser context, warm = reloaded)")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                timings = {
                    project.label: (project, *_ui(browser, project, work))
                    for project in (small, full)
                }
            finally:
                browser.close()
        worst: dict[str, float] = {}
        for label, (project, served, pages) in timings.items():
            _print_pages(project, served, pages)
            worst[label] = max(max(row) for row in pages.values())
        base, ours = worst[small.label], worst[full.label]
        print(
            f"slowest page: full sweep {ours:.2f} s, baseline {base:.2f} s, ratio "
            f"{ours / base:.2f}x; {_verdict(ours, UI_TARGET_S)}"
        )
        print(f"load average (1, 5, 15 min): {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
