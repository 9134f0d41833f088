"""The real path end to end: the CPU recipe on a real vLLM through `inferx sweep --launcher
local`, ingested and drawn on the leaderboard as real; a server killed mid-point.

One server start per test (about 25-70 s on 2 cores): the tiny model of ``recipes/tiny``
and the vLLM venv come from ``scripts/cpu-host`` (cached by their inputs).
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from dataclasses import replace
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from inferx_pipeline.bench.prometheus import ACCEPTED, DRAFTS, scrape
from inferx_pipeline.bench.result import RawResult
from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.cli import cli
from inferx_pipeline.errors import EndpointError
from inferx_pipeline.launch.local import LocalHost
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.launch.subprocess import SubprocessHandle
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.results.store import ResultStore
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.artifacts import (
    METRICS_AFTER,
    METRICS_BEFORE,
    RESULT,
    SERVER_LOG,
    ArtifactStore,
)
from inferx_pipeline.sweep.backends import local_backend
from inferx_pipeline.sweep.report import JobOutcome, NullProgress, SweepOptions
from inferx_pipeline.sweep.runner import run_sweep
from inferx_pipeline.sweep.status import load_policy
from tests.engines.jobs import recipe_jobs
from tests.services.vllm import TINY_RECIPE, CpuHost
from tests.smoke import smoke_root

pytestmark = pytest.mark.vllm

RECIPE_FILE = f"tiny/{TINY_RECIPE}.yaml"
ISL = 128
KILL_DEADLINE_S = 120.0
RUNNING = "vllm:num_requests_running"
_DATA = re.compile(r'<script type="application/json" id="page-data">(.*?)</script>', re.S)


def _engines(model_dir: Path, since: float) -> list[psutil.Process]:
    """`vllm serve` processes on ``model_dir`` started after ``since`` (this test's)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "create_time"]):
        cmdline = proc.info["cmdline"] or []
        ours = "serve" in cmdline and str(model_dir) in cmdline
        if ours and proc.info["create_time"] >= since:
            found.append(proc)
    return found


def _counter_al(store: ArtifactStore, artifacts: dict[str, str]) -> float:
    """1 + accepted / drafts from the engine's own counters around the point."""
    before = json.loads(store.read(artifacts[METRICS_BEFORE]))["samples"]
    after = json.loads(store.read(artifacts[METRICS_AFTER]))["samples"]
    drafts = after[DRAFTS] - before.get(DRAFTS, 0.0)
    accepted = after[ACCEPTED] - before.get(ACCEPTED, 0.0)
    assert drafts > 0, "the speculative method proposed drafts"
    return float(1 + accepted / drafts)


def _sweep_local(
    cpu_host: CpuHost, tmp_path: Path, recipe_file: str, num_prompts: int
) -> tuple[ArtifactStore, dict[str, str]]:
    """``inferx sweep --launcher local`` of one tiny recipe; its artifacts and environment.

    The root keeps the shipped client-saturation rule: a busy CPU engine is contention,
    not saturation.
    """
    root = smoke_root(tmp_path / "root", [recipe_file], saturation=True)
    env = {"INFERX_ROOT": str(root), "INFERX_STATE_DIR": str(tmp_path / "state"), "COLUMNS": "200"}
    art = tmp_path / "art"
    args = ["sweep", "--launcher", "local", "--host-file", str(cpu_host.path)]
    args += ["--artifacts-dir", str(art), "--num-prompts", str(num_prompts)]
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 0, result.output
    assert result.output.rstrip().endswith("2 jobs: 2 ok"), result.output
    return ArtifactStore(art), env


def test_cpu_recipe_sweeps_publishes_and_is_drawn_as_real(
    cpu_host: CpuHost, tmp_path: Path
) -> None:
    since = time.time()
    store, env = _sweep_local(cpu_host, tmp_path, RECIPE_FILE, 8)
    assert _engines(cpu_host.model_dir, since) == [], "the engine is stopped with the sweep"

    manifests = sorted(store.all_attempts(), key=lambda m: m.conc)
    for manifest in manifests:
        raw = RawResult.model_validate_json(store.read(manifest.artifacts[RESULT]))
        assert raw.valid, raw.invalid_reasons
        assert raw.tokenizer_id == str(cpu_host.model_dir / "tokenizer.json")
        # Prompts hit the ISL exactly under the model's own tokenizer (the server counts).
        assert raw.total_input_tokens == ISL * raw.completed
        assert all(text for text in raw.generated_texts)
        meta = raw.metadata
        assert (meta["simulated"], meta["image_digest"]) == (False, "local:vllm==0.32.0+cpu")
        assert meta["engine_version"] == "0.32.0"
        assert raw.acceptance is not None
        assert raw.acceptance.acceptance_length == pytest.approx(
            _counter_al(store, manifest.artifacts)
        )

    db = f"sqlite:///{tmp_path / 'results.sqlite'}"
    site = tmp_path / "site"
    publish = ["publish", "--artifacts-dir", str(store.root), "--db", db, "--out", str(site)]
    published = CliRunner().invoke(cli, publish, env=env)
    assert published.exit_code == 0, published.output
    results = ResultStore(db)
    try:
        rows = results.read_frame()
    finally:
        results.close()
    assert len(rows) == 2 and not rows["simulated"].any()
    page = next(p for p in site.rglob("*.html") if "tiny" in p.name.lower())
    data = json.loads(_DATA.search(page.read_text())[1])  # type: ignore[index]  # the page has it
    assert "simulated" not in json.dumps(data.get("rows", data))


class _Killer:
    """Kills the engine's process group while the chosen point's requests are in flight."""

    def __init__(self, local: object, conc: int) -> None:
        self.local = local
        self.conc = conc
        self.handles: list[SubprocessHandle] = []
        self.killed = threading.Event()

    def start(self, spec: ServerSpec) -> SubprocessHandle:
        handle = self.local.start(spec)  # type: ignore[attr-defined]  # a LocalLauncher
        self.handles.append(handle)
        return handle


class _KillOnStart(NullProgress):
    """At the chosen point's start, a thread kills the engine once it is decoding."""

    def __init__(self, killer: _Killer) -> None:
        self.killer = killer

    def point_started(self, job: BenchmarkJob) -> None:
        if job.conc == self.killer.conc and not self.killer.killed.is_set():
            threading.Thread(target=self._kill, daemon=True).start()

    def _kill(self) -> None:
        deadline = time.monotonic() + KILL_DEADLINE_S
        while time.monotonic() < deadline:
            # Polling the engine's own gauge, bounded by the deadline.
            handles = self.killer.handles
            if handles and _running(handles[-1].base_url) > 0:
                self.killer.killed.set()
                os.killpg(handles[-1].proc.pid, signal.SIGKILL)
                return
            time.sleep(0.05)


def _running(base_url: str) -> float:
    try:
        return scrape(base_url).get(RUNNING) or 0.0
    except EndpointError:  # not up yet
        return 0.0


def test_real_server_killed_mid_point_is_server_exited_with_its_log(
    cpu_host: CpuHost, tmp_path: Path
) -> None:
    since = time.time()
    host: LocalHost = cpu_host.host
    catalog = cached_catalog(Settings().catalog_dir)
    backend = local_backend(catalog, host, tmp_path / "logs")
    jobs = [job for job in recipe_jobs(TINY_RECIPE) if job.conc == 4]
    killer = _Killer(backend.launcher, conc=4)
    store = ArtifactStore(tmp_path / "art")
    report = run_sweep(
        jobs,
        backend=replace(backend, launcher=killer),
        artifacts=store,
        policy=load_policy(Settings().catalog_dir),
        options=SweepOptions(num_prompts=16),
        progress=_KillOnStart(killer),
    )
    assert killer.killed.is_set()
    outcome: JobOutcome = report.outcomes[0]
    dead = store.attempts(jobs[0].fingerprint, 4)[0]
    assert (dead.status, dead.exit_code) == ("server-exited", 137)
    assert b"Uvicorn running" in store.read(dead.artifacts[SERVER_LOG]) or dead.message
    assert "last log lines" in dead.message
    assert outcome.attempts == (1, 2) and len(killer.handles) == 2
    assert _engines(cpu_host.model_dir, since) == [], "no engine is left running"
    assert all(h.exit_status() is not None for h in killer.handles)


def test_cpu_recipe_materializes_through_dagster_on_the_local_launcher(
    cpu_host: CpuHost, tmp_path: Path
) -> None:
    since = time.time()
    root = smoke_root(tmp_path / "root", [RECIPE_FILE], saturation=True)
    state = tmp_path / "state"
    env = {"INFERX_ROOT": str(root), "INFERX_STATE_DIR": str(state), "COLUMNS": "200"}
    args = ["materialize", "--recipe", TINY_RECIPE, "--launcher", "local"]
    args += ["--host-file", str(cpu_host.path), "--num-prompts", "8"]
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 0, result.output
    assert "SUCCESS" in result.output and "2 ok" in result.output, result.output
    assert _engines(cpu_host.model_dir, since) == [], "the engine is stopped with the run"
    results = ResultStore(f"sqlite:///{state / 'results.sqlite'}")
    try:
        rows = results.read_frame()
    finally:
        results.close()
    assert sorted(rows["conc"]) == [1, 4] and not rows["simulated"].any()
    assert set(rows["image_digest"]) == {"local:vllm==0.32.0+cpu"}


@pytest.mark.parametrize(
    ("recipe_file", "draft_tokens"),
    [
        ("tiny/tiny-mimo-bf16-cpu-vllm-mtp.yaml", 1),
        ("tiny/tiny-qwen3-bf16-cpu-vllm-eagle3.yaml", 2),
    ],
    ids=["mtp-layer", "eagle3-head"],
)
def test_model_drafts_are_measured_from_the_engines_counters(
    cpu_host: CpuHost, tmp_path: Path, recipe_file: str, draft_tokens: int
) -> None:
    store, _ = _sweep_local(cpu_host, tmp_path, recipe_file, 4)
    for manifest in store.all_attempts():
        raw = RawResult.model_validate_json(store.read(manifest.artifacts[RESULT]))
        assert raw.valid and raw.acceptance is not None, raw.invalid_reasons
        # The draft model (MTP layer, EAGLE3 head from the host's HF cache) proposed drafts;
        # AL within [1, 1 + draft tokens], as the engine's own counters say.
        counted = _counter_al(store, manifest.artifacts)
        assert raw.acceptance.acceptance_length == pytest.approx(counted)
        assert 1.0 <= counted <= 1.0 + draft_tokens
