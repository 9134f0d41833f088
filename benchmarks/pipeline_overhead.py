"""Dagster's overhead: per partition run (wall time minus the sweep's own time), per sensor
tick, and click-to-SUCCESS through a real ``dagster dev``.

Two measurements on a generated project of 200 recipes (100 copies of each vLLM seed,
each with its own id and nightly image; half track ``nightly-*``, half use a golden
curve):

- Partition runs, in this process on a fresh instance: a range run of two partitions
  of one recipe through ``execute_in_process``, timed against the same sweep called
  directly (``run_sweep``, the baseline, measured in the same run). Overhead = Dagster
  wall time - direct wall time, median of ``REPEATS``.
- Sensor ticks: each change sensor's tick with one change pending (a new image tag in
  an in-memory registry, an edited golden curve, one new commit in a local git
  repository), against loading the 200 recipes' matrix once (the baseline).

And the code location's load, with the repository's own recipes (the project a person
opens): ``dagster api grpc`` (the code server ``dagster dev`` starts) from spawn until it
serves, i.e. Python and Dagster starting, importing ``inferx_pipeline.defs.definitions``
and building its ``Definitions``; median of ``LOADS``, next to the same for an empty
``Definitions`` (what Dagster alone costs). The code server listens only once the
location is loaded, so an open port is the end of the load.

And one on a project of the h200 seed recipe alone, as a person meets it:

- Click to SUCCESS: ``dagster dev`` (webserver, daemon, code server) on the embedded
  instance (queued runs, per-SKU pools); one partition launched over GraphQL as the
  UI's Materialize button does (a new seed each time, so it is measured, not reused),
  timed until the webserver reports SUCCESS, against the step's own time (step start
  to step success in the run's events). Overhead = click-to-SUCCESS - step, median of
  ``CLICKS``. Printed before it: how long ``dagster dev`` took to serve the UI (it
  serves once the code location is loaded; its own webserver, daemon and code-server
  processes each start Python and Dagster too).

The real-time simulator is sped up (time scale 0.02, one request per point) so the
benchmark time is small next to the overhead it brackets. Targets: under 2 s per run,
under 1 s per tick, under 8 s to load the code location, under 8 s from click to SUCCESS
on 2 cores.

    .venv/bin/python benchmarks/pipeline_overhead.py
"""

from __future__ import annotations

import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import yaml

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.defs.definitions import build_definitions, sku_ladders
from inferx_pipeline.defs.devserver import DagsterDev
from inferx_pipeline.defs.execute import (
    graphql_client,
    local_instance,
    prepare_instance,
    run_cells_in_process,
    submit_cells,
    workspace_file,
)
from inferx_pipeline.defs.partitions import add_images
from inferx_pipeline.defs.resources import LauncherResource, RecipeRepoResource
from inferx_pipeline.engines.sim import SimOptions
from inferx_pipeline.images.fake import FakeRegistry
from inferx_pipeline.images.registry import Registries
from inferx_pipeline.matrix.partitions import cell_jobs, ladders, pinned_cells
from inferx_pipeline.plan.build import MatrixRequest, load_matrix
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.artifacts import ArtifactStore
from inferx_pipeline.sweep.backends import simulator_backend
from inferx_pipeline.sweep.report import SweepOptions
from inferx_pipeline.sweep.runner import run_sweep
from inferx_pipeline.sweep.status import load_policy

ROOT = Path(__file__).resolve().parents[1]
RECIPES = 200
REPEATS = 5
RUN_TARGET_S = 2.0
TICK_TARGET_S = 1.0
CLICKS = 3
CLICK_TARGET_S = 8.0
LOADS = 3
LOAD_TARGET_S = 8.0
# A code location with nothing in it: the floor of a code server's load.
EMPTY_LOCATION = "import dagster as dg\n\ndefs = dg.Definitions()\n"
READY_DEADLINE_S = 180.0
TERMINAL = {"SUCCESS", "FAILURE", "CANCELED"}
SEEDS = {
    "h200": ROOT / "recipes/qwen3.8-27b/qwen3.827b-fp8-h200-vllm-mtp.yaml",
    "mi325x": ROOT / "recipes/qwen3.8-27b/qwen3.827b-bf16-mi325x-vllm-mtp.yaml",
}
FAST = LauncherResource(time_scale=0.02, load_time_s=0.0)
# The sweep asset's config of each timed run: one-request points, measured afresh.
SMALL = {"num_prompts": 1, "max_turns": 1, "force": True}
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
}  # fmt: skip


def _base(root: Path) -> Path:
    """A project root with the checkout's catalog (relaxed minimum duration), curves, fragments."""
    shutil.copytree(ROOT / "catalog", root / "catalog")
    validity = root / "catalog" / "bench-validity.yaml"
    rules = yaml.safe_load(validity.read_text())
    rules["min_duration_s"] = 0.0  # points of milliseconds: judged, not hidden
    validity.write_text(yaml.safe_dump(rules))
    shutil.copytree(ROOT / "golden_al_distribution", root / "golden_al_distribution")
    shutil.copytree(ROOT / "recipes" / "_fragments", root / "recipes" / "_fragments")
    (root / "recipes" / "bench").mkdir()
    return root


def _project(root: Path) -> Path:
    """A project root with 200 generated recipes and the checkout's catalog and curves."""
    _base(root)
    for index in range(RECIPES):
        sku = "h200" if index % 2 == 0 else "mi325x"
        doc = SEEDS[sku].read_text().replace("../_fragments/", "../_fragments/")
        doc = doc.replace("\nid: ", f"\nid: bench{index:03d}-").replace(
            ":nightly-", f":nightly-{index:03d}"
        )
        (root / "recipes" / "bench" / f"bench{index:03d}.yaml").write_text(doc)
    return root


def _timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def _runs(settings: Settings) -> tuple[list[float], list[float]]:
    """(Dagster range-run wall times, direct run_sweep wall times), seconds."""
    matrix = load_matrix(MatrixRequest(paths=()), settings)
    recipe = matrix.jobs[0].recipe_id
    jobs = [job for job in matrix.jobs if job.recipe_id == recipe and job.conc in (1, 2)]
    cells = sorted(pinned_cells(jobs), key=lambda cell: cell.conc)
    defs = build_definitions(settings, resources={"launcher": FAST})
    instance = local_instance(settings.dagster_home)
    catalog = cached_catalog(settings.catalog_dir)
    policy = load_policy(settings.catalog_dir)
    sim = SimOptions(time_scale=0.02, load_time_s=0.0)
    options = SweepOptions(num_prompts=1, max_turns=1, force=True)
    ladder = ladders(matrix.jobs)
    selected = cell_jobs(jobs, cells)

    def direct() -> None:
        run_id = uuid.uuid4().hex
        run_sweep(
            selected,
            backend=simulator_backend(catalog, settings.state / "logs" / run_id, sim),
            artifacts=ArtifactStore(settings.artifacts_dir),
            policy=policy,
            options=options,
            run_id=run_id,
        )

    def in_dagster() -> None:
        (run,) = run_cells_in_process(defs, instance, cells, ladder, reason="bench", sweep=SMALL)
        assert run.status == "SUCCESS" and run.jobs == len(selected), run

    dagster_s, direct_s = [], []
    for _ in range(REPEATS):
        dagster_s.append(_timed(in_dagster))
        direct_s.append(_timed(direct))
    instance.dispose()
    return dagster_s, direct_s


def git(repo: Path, *args: str) -> str:
    """``git -C repo args`` as the benchmark's author, without the user's config; stdout."""
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
        env={**os.environ, **GIT_ENV},
    )  # fmt: skip
    return done.stdout.strip()


def sensor_tick(
    defs: dg.Definitions, name: str, instance: dg.DagsterInstance, cursor: str | None
) -> tuple[float, str | None, int]:
    """(seconds, the new cursor, run requests) of one tick of sensor ``name``."""
    context = dg.build_sensor_context(
        instance=instance, cursor=cursor, definitions=defs, resources=dict(defs.resources or {})
    )
    sensor = defs.resolve_sensor_def(name)
    started = time.perf_counter()
    data = sensor.evaluate_tick(context)
    return time.perf_counter() - started, data.cursor, len(data.run_requests or [])


def _ticks(settings: Settings, work: Path) -> dict[str, tuple[float, int]]:
    """Seconds of one tick with one pending change, and the runs it requested, per sensor."""
    registry = FakeRegistry()
    for name in ("vllm/vllm-openai", "vllm/vllm-openai-rocm"):
        registry.push(name, "nightly-000")
    registries = Registries(clients={"docker.io": registry})
    repo = work / "git"
    shutil.copytree(settings.root, repo, ignore=shutil.ignore_patterns(".inferx"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "seed")
    defs = build_definitions(
        settings,
        resources={"registries": registries, "recipes_repo": RecipeRepoResource(source=str(repo))},
    )
    timings = {}
    with dg.instance_for_test() as instance:
        _, image_cursor, _ = sensor_tick(defs, "new_image_tags", instance, None)
        registry.push("vllm/vllm-openai", "nightly-zzz")
        seconds, _, runs = sensor_tick(defs, "new_image_tags", instance, image_cursor)
        timings["new_image_tags"] = (seconds, runs)
        _, curve_cursor, _ = sensor_tick(defs, "golden_curve_changes", instance, None)
        curve = settings.golden_dir / "qwen3.8-27b_mtp.yaml"
        curve.write_text(curve.read_text().replace("3: 2.51", "3: 2.52"))
        seconds, _, runs = sensor_tick(defs, "golden_curve_changes", instance, curve_cursor)
        timings["golden_curve_changes"] = (seconds, runs)
        _, git_cursor, _ = sensor_tick(defs, "merged_recipe_changes", instance, None)
        changed = repo / "recipes/bench/bench000.yaml"
        changed.write_text(changed.read_text() + "notes: tuned\n")
        git(repo, "commit", "-q", "-am", "tune bench000")
        seconds, _, runs = sensor_tick(defs, "merged_recipe_changes", instance, git_cursor)
        timings["merged_recipe_changes"] = (seconds, runs)
    return timings


# Where a click's time goes: the run's events in order, each phase ending at the first of
# its kind (the first engine event is the run worker's "Started process for run").
PHASES = {
    "submitted until queued": dg.DagsterEventType.RUN_ENQUEUED,
    "queued until the daemon launches it": dg.DagsterEventType.RUN_STARTING,
    "run worker spawned, instance opened": dg.DagsterEventType.ENGINE_EVENT,
    "code location loaded in the worker": dg.DagsterEventType.RUN_START,
    "run start to step start": dg.DagsterEventType.STEP_START,
    "step": dg.DagsterEventType.STEP_SUCCESS,
    "step success to run success": dg.DagsterEventType.RUN_SUCCESS,
}
STEP = "step"


def _phases(instance: dg.DagsterInstance, run_id: str) -> dict[str, float]:
    """Seconds of each of PHASES in run ``run_id``, from its creation (queueing) on."""
    record = instance.get_run_record_by_id(run_id)
    assert record is not None, run_id
    stamps: dict[dg.DagsterEventType, float] = {}
    for entry in instance.all_logs(run_id, of_type=set(PHASES.values())):
        if entry.dagster_event_type is not None:
            stamps.setdefault(entry.dagster_event_type, entry.timestamp)
    before = record.create_timestamp.timestamp()
    phases = {}
    for name, kind in PHASES.items():
        phases[name] = stamps[kind] - before
        before = stamps[kind]
    return phases


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _location_load(module: str, env: dict[str, str]) -> float:
    """Seconds from spawning ``dagster api grpc -m module -a defs`` until it serves."""
    port = _free_port()
    dagster = Path(sys.executable).with_name("dagster")
    argv = [str(dagster), "api", "grpc", "-m", module, "-a", "defs", "-h", "127.0.0.1"]
    started = time.perf_counter()
    server = subprocess.Popen(
        [*argv, "-p", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"{' '.join(argv)} exited: {server.communicate()[1]!r}")
            assert time.perf_counter() - started < READY_DEADLINE_S, f"{module} never served"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return time.perf_counter() - started
            except OSError:
                time.sleep(0.02)  # polling a starting server, under a deadline
    finally:
        server.terminate()
        server.wait(READY_DEADLINE_S)


def _location_loads(work: Path) -> tuple[float, float]:
    """Median load of the repository's code location and of an empty one, seconds."""
    (work / "empty_location.py").write_text(EMPTY_LOCATION)
    env = {
        **os.environ,
        "INFERX_ROOT": str(ROOT),
        "INFERX_STATE_DIR": str(work / "load-state"),
        "DAGSTER_HOME": str(work / "load-home"),
        "PYTHONPATH": str(work),
    }
    (work / "load-home").mkdir()
    ours = [_location_load("inferx_pipeline.defs.definitions", env) for _ in range(LOADS)]
    empty = [_location_load("empty_location", env) for _ in range(LOADS)]
    return statistics.median(ours), statistics.median(empty)


def _clicks(work: Path) -> tuple[float, list[tuple[float, dict[str, float]]]]:
    """dagster dev's start to serving (s), and (click-to-SUCCESS s, phases) of each of
    CLICKS one-partition runs in it."""
    root = _base(work / "one-recipe")
    shutil.copy(SEEDS["h200"], root / "recipes" / "bench" / SEEDS["h200"].name)
    env = {**os.environ, "INFERX_ROOT": str(root), "INFERX_STATE_DIR": str(work / "ui-state")}
    os.environ.update(env)  # this process reads the same project as the server
    settings = Settings()
    ladder = sku_ladders(settings)
    prepare_instance(settings.dagster_home, ladder, None, os.environ)
    cell = min(pinned_cells(load_matrix(MatrixRequest(paths=()), settings).jobs), key=str)
    instance = local_instance(settings.dagster_home)
    add_images(instance, [cell])
    server = DagsterDev(
        workspace_file(settings.dagster_home),
        settings.dagster_home,
        port=_free_port(),
        log=work / "dagster-dev.log",
        env=env,
    )
    timings = []
    started = time.perf_counter()
    with server:
        server.wait_ready(READY_DEADLINE_S)
        ui_start = time.perf_counter() - started
        client = graphql_client(server.url)
        for seed in range(1, CLICKS + 1):
            config = {"time_scale": 0.02, "load_time_s": 0.0}
            started = time.perf_counter()
            (run,) = submit_cells(
                client,
                [cell],
                ladder,
                reason="bench",
                config={"resources": {"launcher": {"config": config}}},
                sweep={"num_prompts": 1, "seed": seed},
            )
            deadline = started + READY_DEADLINE_S
            while (status := client.get_run_status(run.run_id).value) not in TERMINAL:
                assert time.perf_counter() < deadline, f"run {run.run_id} still {status}"
                time.sleep(0.05)  # polling the webserver as the UI does, under a deadline
            clicked = time.perf_counter() - started
            assert status == "SUCCESS", f"run {run.run_id}: {status}"
            timings.append((clicked, _phases(instance, run.run_id)))
    instance.dispose()
    return ui_start, timings


def main() -> None:
    warnings.filterwarnings("ignore", category=dg.BetaWarning)
    warnings.filterwarnings("ignore", category=dg.PreviewWarning)
    with tempfile.TemporaryDirectory(prefix="inferx-overhead-") as tmp:
        work = Path(tmp)
        root = _project(work / "root")
        os.environ["INFERX_ROOT"] = str(root)  # read by the simulator children and the client
        os.environ["INFERX_STATE_DIR"] = str(work / "state")
        settings = Settings()
        matrix_s = min(
            _timed(lambda: load_matrix(MatrixRequest(paths=()), settings)) for _ in range(3)
        )
        jobs = load_matrix(MatrixRequest(paths=()), settings).jobs
        print(
            f"project: {RECIPES} recipes, {len(jobs)} jobs; matrix load {matrix_s:.3f} s (baseline)"
        )
        dagster_s, direct_s = _runs(settings)
        run_dagster, run_direct = statistics.median(dagster_s), statistics.median(direct_s)
        overhead = run_dagster - run_direct
        print(
            f"partition run (2 partitions, one server), median of {REPEATS}: Dagster "
            f"{run_dagster:.3f} s, direct run_sweep {run_direct:.3f} s, ratio "
            f"{run_dagster / run_direct:.2f}x; overhead {overhead:.3f} s per run "
            f"({overhead / RUN_TARGET_S:.2f} of the {RUN_TARGET_S:.0f} s target)"
        )
        for name, (seconds, runs) in _ticks(settings, work).items():
            print(
                f"sensor tick {name:<24} {seconds:.3f} s ({seconds / matrix_s:.1f}x the matrix "
                f"load; {runs} run requests; {seconds / TICK_TARGET_S:.2f} of the "
                f"{TICK_TARGET_S:.0f} s target)"
            )
        print_load(*_location_loads(work))
        ui_start, clicks = _clicks(work)
        print(f"UI start (dagster dev until it serves, one recipe): {ui_start:.2f} s")
        print_clicks(clicks)


def print_load(ours: float, empty: float) -> None:
    """The code location's load against its target, and Dagster's own share of it."""
    print(
        f"code location load (dagster api grpc, the repository's recipes), median of {LOADS}: "
        f"{ours:.2f} s ({ours / LOAD_TARGET_S:.2f} of the {LOAD_TARGET_S:.0f} s target); an "
        f"empty Definitions {empty:.2f} s, so inferx's own import and build {ours - empty:.2f} s"
    )


def print_clicks(clicks: list[tuple[float, dict[str, float]]]) -> None:
    """The click-to-SUCCESS line, then the median of each phase, and the load average."""
    clicked = statistics.median(c for c, _ in clicks)
    step = statistics.median(p[STEP] for _, p in clicks)
    print(
        f"click to SUCCESS (one partition, dagster dev), median of {CLICKS}: "
        f"{clicked:.2f} s, the step itself {step:.2f} s, ratio {clicked / step:.1f}x; "
        f"overhead {clicked - step:.2f} s ({(clicked - step) / CLICK_TARGET_S:.2f} of the "
        f"{CLICK_TARGET_S:.0f} s target)"
    )
    for name in PHASES:
        print(f"  {name:<40} {statistics.median(p[name] for _, p in clicks):6.2f} s")
    in_runs = statistics.median(sum(p.values()) for _, p in clicks)
    print(f"  {'run success to the client seeing it':<40} {clicked - in_runs:6.2f} s")
    print(f"  load average (1, 5, 15 min): {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
