"""The whole InferenceX single-node sweep through Dagster on the simulator, and a backfill.

    .venv/bin/python benchmarks/full_sweep.py [--sku SKU ...] [--tags 50] [--keep DIR]
        [--where local|deployment|both] [--multinode]

What it does, in a project of its own under a temp folder (nothing of the checkout's
state is touched):

1. Imports InferenceX's two master configurations (third_party/inferencex/configs) with
   ``inferx import-inferencex masters`` and keeps the single-node recipes (all of them with
   ``--multinode``: each deployment's ranks and router run as processes of this host); the
   project runs them as InferenceX does (``INFERX_RECIPE_CHECKS=parity``: no pre-GPU gate,
   identical jobs kept, though a job identical to an earlier one is measured once).
2. ``inferx matrix --format json --evals`` over it: the jobs the sweep must end with.
3. Local: ``inferx materialize --evals`` of every SKU (or ``--sku``) on the simulator,
   compressed in time: the simulator's clock scaled by ``--time-scale`` (default 0.001),
   one request per point (``--num-prompts 1``, agentic sessions cut at one turn), no
   simulated model load. Each SKU x image x range of concurrencies is one Dagster run.
4. Local: ``inferx backfill`` of one recipe over ``--tags`` image tags (default 50).
5. Deployment: the sweep of 3 queued (``inferx materialize --webserver``) on a ``dagster
   dev`` whose instance is deploy/dagster.yaml's (Dagster storage on PostgreSQL, queued
   runs, a pool of one run per SKU) and whose results database is PostgreSQL too, both in
   a private cluster; its runs are processes of the code server (not containers), its
   simulator clock INFERX_SIM_TIME_SCALE, its evals scored without an answer key.

For each it prints: jobs and their statuses (every job must end with one), Dagster runs
and their statuses, wall time (for the deployment, to the last run's end), the simulated
time (the sum of the points' measured durations), the evals' time (lm-eval's runs, the
eval jobs' own work), the orchestration overhead (wall less both) per run and per job,
peak RSS of the largest process of each role (the in-process ``inferx``, webserver,
daemon, code server, run worker, simulator, lm-eval), results rows (one per measured
point), the results database and Dagster storage sizes, and the leaderboard site's build
time and size. Budget: overhead at most 1 s per job.

Two things in the project's catalog copy differ from the checkout's, both because of what
this host is: a point lasting milliseconds cannot meet the 10 s minimum duration of
``bench-validity.yaml`` (set to 0 here), and there is no Hugging Face Hub to fetch
GSM8K from, so evals score the shipped GSM8K-format task (``gsm8k-inferx``) against the
simulator's answer key.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import yaml
from ingest import throwaway_postgres  # benchmarks/ingest.py: a private PostgreSQL cluster
from sqlalchemy import URL, text

from inferx_pipeline.results.store import ResultStore

ROOT = Path(__file__).resolve().parents[1]
INFERX = Path(sys.executable).with_name("inferx")
MASTERS = [
    ROOT / "third_party/inferencex/configs" / f for f in ("amd-master.yaml", "nvidia-master.yaml")
]
ANSWER_KEY = ROOT / "inferx_pipeline/evals/data/gsm8k-inferx-test.jsonl"
OVERHEAD_BUDGET_S = 1.0  # per job, on 2 cores (issue 23)
SAMPLE_S = 0.2  # RSS sampling period


def make_project(root: Path, multinode: bool) -> Path:
    """A project at ``root``: the catalog and curves, the imported single-node recipes
    (and the multinode ones with ``multinode``)."""
    shutil.copytree(ROOT / "catalog", root / "catalog")
    shutil.copytree(ROOT / "golden_al_distribution", root / "golden_al_distribution")
    validity = root / "catalog/bench-validity.yaml"
    rules = yaml.safe_load(validity.read_text())
    rules["min_duration_s"] = 0.0  # a compressed point lasts milliseconds (module doc)
    validity.write_text(yaml.safe_dump(rules, sort_keys=False))
    evals = root / "catalog/evals.yaml"
    catalog = yaml.safe_load(evals.read_text())
    catalog["tasks"]["gsm8k"] = catalog["tasks"]["gsm8k-inferx"]  # no Hub here (module doc)
    evals.write_text(yaml.safe_dump(catalog, sort_keys=False))
    imported = root / "imported"
    _inferx(["import-inferencex", "masters", *map(str, MASTERS), "--out", str(imported)], {})
    recipes = root / "recipes"
    recipes.mkdir()
    for path in sorted(imported.glob("*.yaml")):
        if multinode or not yaml.safe_load(path.read_text()).get("multinode"):
            shutil.copy2(path, recipes / path.name)
    shutil.rmtree(imported)
    return root


def _inferx(args: list[str], env: Mapping[str, str]) -> str:
    done = subprocess.run(
        [str(INFERX), *args], env={**os.environ, **env}, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(
            f"inferx {' '.join(args)} exited {done.returncode}:\n{done.stderr[-4000:]}"
        )
    return done.stdout


ROLES = {  # a marker in a process's command line -> the role whose peak RSS is printed
    "inferx materialize": "inferx (runs in-process)", "inferx backfill": "inferx (runs in-process)",
    "dagster_webserver": "webserver", "dagster._daemon": "daemon", "api grpc": "code server",
    "spawn_main": "run worker", "sim serve": "simulator", "lm_eval": "lm-eval",
}  # fmt: skip


def _role(process: psutil.Process) -> str | None:
    command = " ".join(process.cmdline())
    return next((role for marker, role in ROLES.items() if marker in command), None)


@contextmanager
def sampled(leader: int) -> Iterator[dict[str, int]]:
    """Peak RSS (bytes) of the largest process of each role (ROLES) in ``leader``'s
    process tree, sampled every SAMPLE_S until the block ends."""
    peaks: dict[str, int] = collections.defaultdict(int)
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(SAMPLE_S):
            try:
                root = psutil.Process(leader)
                tree = [root, *root.children(recursive=True)]
            except psutil.Error:
                continue  # the leader is gone: the block is ending
            for process in tree:
                with contextlib.suppress(psutil.Error):  # it ended since the listing
                    if (role := _role(process)) is not None:
                        peaks[role] = max(peaks[role], process.memory_info().rss)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield peaks
    finally:
        stop.set()
        thread.join()


@dataclass
class Outcome:
    """What one ``inferx`` command measured, and the jobs it had to end."""

    label: str
    wall_s: float
    exit_code: int
    peaks: dict[str, int]
    expected: int = 0


def timed_inferx(label: str, args: list[str], env: Mapping[str, str], log: Path) -> Outcome:
    """Run ``inferx args`` to its end, its output to ``log``; wall time and peak RSS."""
    with log.open("wb") as out:
        started = time.monotonic()
        process = subprocess.Popen(
            [str(INFERX), *args], env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT
        )
        with sampled(process.pid) as peaks:
            code = process.wait()
        wall = time.monotonic() - started
    return Outcome(label, wall, code, peaks)


def report(
    outcome: Outcome,
    env: Mapping[str, str],
    *,
    results_url: str | None = None,
    per_run: bool = False,
    busy_s: float | None = None,
) -> list[str]:
    """The printed lines of ``outcome`` (see the module doc); problems go in the returned list."""
    from inferx_pipeline.defs.execute import local_instance
    from inferx_pipeline.sweep.artifacts import ArtifactStore

    state, home = Path(env["INFERX_STATE_DIR"]), Path(env["DAGSTER_HOME"])
    # A job's last attempt: in each run for a backfill (the same job once per image), else
    # over every run (a retried run's jobs are one job each).
    latest: dict[tuple[str, str], tuple[float, str]] = {}
    scoring = 0.0  # lm-eval's own time: the evals' work, not orchestration
    for attempt in ArtifactStore(state / "artifacts").all_attempts():
        key = (attempt.job_id, attempt.run_id if per_run else "")
        if key not in latest or attempt.finished_at > latest[key][0]:
            latest[key] = (attempt.finished_at, attempt.status)
        if _is_eval(attempt.job_id):
            scoring += attempt.finished_at - attempt.started_at
    statuses = collections.Counter(status for _, status in latest.values())
    problems = []
    if len(latest) != outcome.expected:
        problems.append(f"{outcome.expected} jobs planned, {len(latest)} ended with a status")
    results = ResultStore(results_url or f"sqlite:///{state / 'results.sqlite'}")
    try:
        rows = results.read_frame()
        results_size, storage = _sizes(results, state, home)
    finally:
        results.close()
    # A measured point is a row, valid when it ended ok (result-invalid: stored, not valid).
    points = collections.Counter(st for (job, _), (_, st) in latest.items() if not _is_eval(job))
    if (len(rows), int(rows["valid"].sum())) != (
        points["ok"] + points["result-invalid"],
        points["ok"],
    ):
        problems.append(f"points {dict(points)}, {len(rows)} results rows")
    instance = local_instance(home)
    try:
        runs = instance.get_runs()
        run_statuses = collections.Counter(run.status.value for run in runs)
        sweep_runs = sum(1 for run in runs if run.job_name.startswith("sweep_"))
    finally:
        instance.dispose()
    simulated = float(rows["duration_s"].fillna(0).sum())
    jobs = len(latest)
    # Runs side by side (a deployment's pools) add up: their summed time, not the wall.
    busy = outcome.wall_s if busy_s is None else busy_s
    overhead = busy - simulated - scoring
    mib = 1 << 20
    lines = [
        f"== {outcome.label}",
        f"jobs           {jobs} of {outcome.expected} ended: "
        + ", ".join(f"{n} {s}" for s, n in statuses.most_common()),
        f"points stored  {len(rows)} results rows ({int(rows['valid'].sum())} valid)",
        f"dagster runs   {len(runs)} ({sweep_runs} sweep runs): "
        + ", ".join(f"{n} {s}" for s, n in run_statuses.most_common()),
        f"wall           {outcome.wall_s:.1f} s (exit {outcome.exit_code})",
        f"simulated      {simulated:.1f} s (sum of the points' measured durations)",
        f"evals          {scoring:.1f} s (sum of the eval jobs' lm-eval runs)",
        f"overhead       {overhead:.1f} s ({'wall' if busy_s is None else 'run time'} - "
        "simulated - evals): "
        f"{overhead / max(sweep_runs, 1):.2f} s per sweep run, "
        f"{overhead / max(jobs, 1):.3f} s per job (budget {OVERHEAD_BUDGET_S:g} s: "
        f"{'met' if overhead <= OVERHEAD_BUDGET_S * jobs else 'NOT met'})",
        f"peak RSS       {_peaks(outcome.peaks)}",
        f"storage        results {results_size / mib:.1f} MiB, Dagster {storage / mib:.1f} MiB",
    ]
    started = time.monotonic()
    _inferx(["leaderboard", "build"], env)
    built = time.monotonic() - started
    site = sum(p.stat().st_size for p in (state / "site").rglob("*") if p.is_file())
    pages = sum(1 for _ in (state / "site").rglob("*.html"))
    lines.append(f"site           built in {built:.1f} s: {pages} pages, {site / mib:.1f} MiB")
    if outcome.exit_code not in (0, 1):  # 1: a run failed; its jobs still carry statuses
        problems.append(f"{outcome.label} exited {outcome.exit_code}")
    return [*lines, *(f"PROBLEM: {p}" for p in problems)]


def _peaks(peaks: Mapping[str, int]) -> str:
    return ", ".join(f"{role} {rss >> 20} MiB" for role, rss in sorted(peaks.items()))


def _sizes(results: ResultStore, state: Path, home: Path) -> tuple[int, int]:
    """Bytes of the results database and of the Dagster storage (files, or databases)."""
    if results.engine.dialect.name == "sqlite":
        files = sum(p.stat().st_size for p in home.rglob("*") if p.is_file())
        return (state / "results.sqlite").stat().st_size, files
    with results.engine.connect() as conn:
        size = "SELECT pg_database_size(:db)"
        mine = conn.execute(text(size), {"db": results.engine.url.database}).scalar_one()
        dagster = conn.execute(text(size), {"db": "dagster"}).scalar_one()
    return int(mine), int(dagster)


def _distinct(matrix: list[dict[str, Any]]) -> int:
    """The points of ``matrix`` the sweep measures: a job identical to an earlier one
    (InferenceX runs both) is measured once, under the first recipe (``cell_jobs``)."""
    return len({(job["fingerprint"], job["conc"]) for job in matrix})


def _is_eval(job_id: str) -> bool:
    return job_id.endswith("/eval")


def sweep_env(root: Path, name: str) -> dict[str, str]:
    """The environment of one measured command: the project, its own state and instance."""
    lm_eval = subprocess.run(
        [str(ROOT / "scripts/lm-eval-env")], check=True, capture_output=True, text=True
    ).stdout.strip()  # the project has no scripts/: the checkout's cached venv
    return {
        "INFERX_LM_EVAL_PYTHON": lm_eval,
        "INFERX_ROOT": str(root),
        "INFERX_STATE_DIR": str(root / name / "state"),
        "DAGSTER_HOME": str(root / name / "dagster"),
        "INFERX_RECIPE_CHECKS": "parity",
        "INFERX_MATRIX_CACHE_DIR": "",
        "COLUMNS": "160",
    }


POINT_FLAGS = ["--num-prompts", "1", "--max-turns", "1", "--load-time-s", "0"]


def full_sweep(root: Path, skus: list[str], time_scale: float) -> list[str]:
    """Step 3 of the module doc: the whole sweep (or ``skus``), measured."""
    env = sweep_env(root, "sweep")
    selection = [arg for sku in skus for arg in ("--sku", sku)]
    started = time.monotonic()
    matrix = json.loads(_inferx(["matrix", "--format", "json", "--evals", *selection], env))
    planned = time.monotonic() - started
    args = ["materialize", "--evals", *selection, "--time-scale", str(time_scale), *POINT_FLAGS,
            "--sim-answer-key", str(ANSWER_KEY)]  # fmt: skip
    outcome = timed_inferx("full sweep (inferx materialize --evals)", args, env, root / "sweep.log")
    outcome.expected = _distinct(matrix)
    skus_seen = sorted({job["sku"] for job in matrix})
    head = [
        f"matrix         {len(matrix)} jobs on {len(skus_seen)} SKUs "
        f"({sum(1 for j in matrix if _is_eval(j['job_id']))} evals, "
        f"{len(matrix) - outcome.expected} identical to another) in {planned:.2f} s"
    ]
    return [*head, *report(outcome, env)]


def backfill(root: Path, tags: int, time_scale: float) -> list[str]:
    """Step 4: one recipe over ``tags`` image tags of its engine image's repository."""
    env = sweep_env(root, "backfill")
    jobs = json.loads(_inferx(["matrix", "--format", "json"], env))
    first = min(jobs, key=lambda job: (job["sku"], job["recipe_id"]))
    recipe = first["recipe_id"]
    mine = [job for job in jobs if job["recipe_id"] == recipe]
    repository = first["engine"]["image"].rsplit(":", 1)[0]
    images = [f"{repository}:backfill-{n:03d}" for n in range(tags)]
    # The recipe tracks the tags (engine.track), as a recipe replayed over history does.
    path = Path(first["recipe_path"])
    doc = yaml.safe_load(path.read_text())
    doc["engine"]["track"] = {"tags": ["backfill-*"]}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    args = ["backfill", "--recipe", recipe, "--time-scale", str(time_scale), *POINT_FLAGS,
            *(arg for image in images for arg in ("--images", image))]  # fmt: skip
    label = f"backfill of {recipe} ({len(mine)} jobs) over {tags} image tags"
    outcome = timed_inferx(label, args, env, root / "backfill.log")
    outcome.expected = len(mine) * tags
    return report(outcome, env, per_run=True)


# The deployment's instance as deploy/dagster.yaml has it: PostgreSQL storage, queued
# runs, one run at a time per SKU pool; runs are processes of the code server here, not
# containers. The embedded instance's text follows this block.
DEPLOYED_STORAGE = """\
storage:
  postgres:
    postgres_url: {url}
"""
ACTIVE = {"QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING"}


def deployment_sweep(root: Path, skus: list[str], time_scale: float) -> list[str]:
    """The sweep queued on a ``dagster dev`` whose instance and results are on PostgreSQL."""
    from inferx_pipeline.defs.devserver import DagsterDev
    from inferx_pipeline.defs.execute import EMBEDDED_INSTANCE, workspace_file

    env = sweep_env(root, "deployment")
    selection = [arg for sku in skus for arg in ("--sku", sku)]
    home = Path(env["DAGSTER_HOME"])
    with throwaway_postgres() as base:
        for db in ("dagster", "results"):
            subprocess.run(["psql", "-h", base.host or "", "-p", str(base.port), "-U",
                            base.username or "", "-d", "postgres", "-qc", f"CREATE DATABASE {db}"],
                           check=True, capture_output=True)  # fmt: skip
        home.mkdir(parents=True)
        (home / "dagster.yaml").write_text(
            DEPLOYED_STORAGE.format(url=_url(base, "dagster")) + EMBEDDED_INSTANCE
        )
        results_url = _url(base, "results")
        env |= {"INFERX_DATABASE_URL": results_url, "INFERX_SIM_TIME_SCALE": str(time_scale)}
        port = _free_port()
        dev = DagsterDev(workspace_file(root / "deployment"), home, port=port,
                         log=root / "deployment.log", env={**os.environ, **env})  # fmt: skip
        with dev:
            dev.wait_ready(300)
            assert dev.process is not None
            with sampled(dev.process.pid) as peaks:
                started = time.time()
                args = ["materialize", "--evals", *selection, *POINT_FLAGS, "--webserver", dev.url,
                        "--dagster-home", str(home)]  # fmt: skip
                _inferx(args, env)
                finished, ended_at, busy = _drain(home, deadline_s=3 * 3600)
                wall = ended_at - started  # to the last run's end, not the quiet wait after
            lines = [f"deployment     dagster dev on PostgreSQL, all runs ended {finished}"]
        outcome = Outcome("full sweep on the deployment (PostgreSQL, queued runs, pools)",
                          wall, 0, dict(peaks))  # fmt: skip
        matrix = json.loads(_inferx(["matrix", "--format", "json", "--evals", *selection], env))
        outcome.expected = _distinct(matrix)
        report_lines = report(outcome, env, results_url=results_url, busy_s=busy)
    return [*report_lines[:1], *lines, *report_lines[1:]]


def _url(base: URL, database: str) -> str:
    return base.set(database=database).render_as_string(hide_password=False)


def _drain(home: Path, deadline_s: float) -> tuple[str, float, float]:
    """Wait for the instance's runs to end (the publish sensor's included): their statuses,
    when the last one ended (Unix seconds) and their summed run time (s)."""
    from inferx_pipeline.defs.execute import local_instance

    instance = local_instance(home)
    try:
        deadline = time.monotonic() + deadline_s
        quiet_since: float | None = None
        while time.monotonic() < deadline:
            runs = instance.get_runs()
            if any(run.status.value in ACTIVE for run in runs):
                quiet_since = None
            elif quiet_since is None:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since > 45:  # the publish sensor ticks every 30 s
                break
            time.sleep(2)  # polling the instance, under the deadline
        records = instance.get_run_records()
        counts = collections.Counter(record.dagster_run.status.value for record in records)
        ended = max((r.end_time for r in records if r.end_time is not None), default=time.time())
        busy = sum(r.end_time - r.start_time for r in records if r.end_time and r.start_time)
        return ", ".join(f"{n} {s}" for s, n in counts.most_common()), ended, busy
    finally:
        instance.dispose()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sku", action="append", default=[], help="only these SKUs")
    parser.add_argument("--tags", type=int, default=50, help="image tags of the backfill")
    parser.add_argument("--time-scale", type=float, default=0.001)
    parser.add_argument("--keep", type=Path, help="build the project here and keep it")
    parser.add_argument("--where", choices=("local", "deployment", "both"), default="both")
    parser.add_argument(
        "--multinode", action="store_true", help="with the multinode recipes (each rank a process)"
    )
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="inferx-full-sweep-"))
    try:
        started = time.monotonic()
        root = make_project(base / "project", args.multinode)
        kind = "recipes" if args.multinode else "single-node recipes"
        print(f"project        {root} ({sum(1 for _ in (root / 'recipes').glob('*.yaml'))} "
              f"{kind} imported in {time.monotonic() - started:.1f} s)")  # fmt: skip
        if args.where in ("local", "both"):
            for line in full_sweep(root, args.sku, args.time_scale):
                print(line, flush=True)
        if args.where in ("deployment", "both"):
            for line in deployment_sweep(root, args.sku, args.time_scale):
                print(line, flush=True)
        if args.tags:
            for line in backfill(root, args.tags, args.time_scale):
                print(line, flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
