"""The real path end to end on the CPU recipes of ``recipes/tiny`` and a real vLLM:

- n-gram through `inferx sweep --launcher local`, its engine killed mid-point and
  restarted, then ingested and drawn on the leaderboard as real;
- MTP through `inferx materialize` (Dagster), EAGLE3 through `inferx sweep`, each AL the
  engine's own counters'.

Every vLLM start costs about 25-45 s on 2 cores (two imports of torch and vLLM: its CPU
platform spawns the engine core), so each test starts one server, the kill test two. The
tiny models and the vLLM venv come from ``scripts/cpu-host`` (cached by their inputs).
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from inferx_pipeline.bench.prometheus import ACCEPTED, DRAFTS, scrape
from inferx_pipeline.bench.result import RawResult
from inferx_pipeline.cli import cli
from inferx_pipeline.errors import EndpointError
from inferx_pipeline.results.store import ResultStore
from inferx_pipeline.sweep.artifacts import (
    METRICS_AFTER,
    METRICS_BEFORE,
    RESULT,
    SERVER_LOG,
    ArtifactStore,
)
from tests.services.vllm import TINY_RECIPE, CpuHost
from tests.smoke import smoke_root

pytestmark = pytest.mark.vllm

RECIPE_FILE = f"tiny/{TINY_RECIPE}.yaml"
ISL = 128
KILL_DEADLINE_S = 120.0
RUNNING = "vllm:num_requests_running"
FINISHED = "vllm:request_success_total"
KILLED_POINT_PROMPTS = 24  # per point: the concurrency-4 point lasts several rounds
_DATA = re.compile(r'<script type="application/json" id="page-data">(.*?)</script>', re.S)


def _pids() -> frozenset[int]:
    """The processes alive now: engines not among them were started by this test.

    (Not a start time: psutil's is boot time plus ticks, and its boot time can sit a
    second or more off the wall clock, so a just-started engine may look older.)
    """
    return frozenset(psutil.pids())


def _engines(model_dir: Path, before: frozenset[int]) -> list[psutil.Process]:
    """`vllm serve` API servers on ``model_dir`` not alive ``before`` (this test's)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if "serve" in cmdline and str(model_dir) in cmdline and proc.pid not in before:
            found.append(proc)
    return found


def _engine_processes(python: Path, before: frozenset[int]) -> list[psutil.Process]:
    """Every process of the engine's venv not alive ``before``: API servers and the engine
    cores and helpers they spawn (``multiprocessing`` children run the same interpreter,
    their argv naming no model), so a leaked child counts too."""
    venv = str(python.parent)
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if cmdline and cmdline[0].startswith(venv) and proc.pid not in before:
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


class _Killer(threading.Thread):
    """SIGKILLs the first engine of the sweep inside its concurrency-4 point.

    Only that point puts two requests in flight (the one before it runs at concurrency 1),
    and it starts after the first point's ``prompts`` have finished; so two requests
    running, or a few more than ``prompts`` finished (a gauge can fall between two
    scrapes of a loaded host, a counter cannot), is that point with requests being decoded.
    """

    def __init__(self, cpu_host: CpuHost, before: frozenset[int], prompts: int) -> None:
        super().__init__(daemon=True)
        self.model_dir, self.python, self.before = cpu_host.model_dir, cpu_host.python, before
        self.finished_in_point = prompts + 4
        self.seen: set[int] = set()  # every engine process observed (the matcher matches)
        self.killed = threading.Event()
        self.done = threading.Event()

    def run(self) -> None:
        deadline = time.monotonic() + KILL_DEADLINE_S
        engine: tuple[int, str] | None = None  # process group, base URL
        while not self.done.is_set() and time.monotonic() < deadline:
            # Polling the engine's process list, then its own gauge, bounded by the deadline.
            if engine is None:
                if found := _engines(self.model_dir, self.before):
                    self.seen |= {p.pid for p in _engine_processes(self.python, self.before)}
                    argv = found[0].cmdline()
                    port = argv[argv.index("--port") + 1]
                    engine = (os.getpgid(found[0].pid), f"http://127.0.0.1:{port}")
            elif _in_second_point(engine[1], self.finished_in_point):
                os.killpg(engine[0], signal.SIGKILL)
                self.killed.set()
                return
            time.sleep(0.05)


def _in_second_point(base_url: str, finished: int) -> bool:
    try:
        metrics = scrape(base_url)
    except EndpointError:  # not up yet
        return False
    return (metrics.get(RUNNING) or 0.0) >= 2 or (metrics.get(FINISHED) or 0.0) >= finished


def test_cpu_recipe_sweeps_survives_a_killed_engine_publishes_and_is_drawn_as_real(
    cpu_host: CpuHost, tmp_path: Path
) -> None:
    before = _pids()
    killer = _Killer(cpu_host, before, KILLED_POINT_PROMPTS)
    killer.start()
    try:
        store, env = _sweep_local(cpu_host, tmp_path, RECIPE_FILE, KILLED_POINT_PROMPTS)
    finally:
        killer.done.set()
    assert killer.killed.is_set()
    assert killer.seen, "the engine's processes were observed while it ran"
    assert _engine_processes(cpu_host.python, before) == [], "every engine process stops"

    # The killed point: server-exited with the engine's log tail, then measured again on a
    # restarted engine.
    [dead, retried] = sorted(
        (m for m in store.all_attempts() if m.conc == 4), key=lambda m: m.attempt
    )
    assert (dead.status, dead.exit_code) == ("server-exited", 137)
    log = store.read(dead.artifacts[SERVER_LOG])
    assert b"Application startup complete." in log and b"POST /v1/" in log, "served, then killed"
    assert "last log lines" in dead.message
    assert retried.status == "ok"

    measured = [m for m in store.all_attempts() if m.status == "ok"]
    assert sorted(m.conc for m in measured) == [1, 4]
    for manifest in measured:
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
    # Every attempt is history; the killed one is stored, but never as a valid point.
    points = sorted(zip(rows["conc"], rows["attempt"], rows["valid"], strict=True))
    assert points == [(1, 1, True), (4, 1, False), (4, 2, True)], rows["status"].tolist()
    assert not rows["simulated"].any()
    page = next((site / "models").glob("*tiny*.html"))  # the model page: tiers and badges
    html = page.read_text()
    data = json.loads(_DATA.search(html)[1])  # type: ignore[index]  # the page has it
    assert data["tiers"] and all(row["simulated"] is False for row in data["tiers"])
    table = html[html.index("<tbody>") : html.index("</tbody>")]
    assert "badge" in table and ">simulated<" not in table, "real rows carry no simulated badge"


MTP_RECIPE = "tiny-mimo-bf16-cpu-vllm-mtp"
EAGLE3_RECIPE = "tiny-qwen3-bf16-cpu-vllm-eagle3"


def _drafts_match_counters(store: ArtifactStore, draft_tokens: int) -> None:
    """Every point is valid and its AL is the engine's own counters' (within the drafts)."""
    manifests = store.all_attempts()
    assert manifests
    for manifest in manifests:
        raw = RawResult.model_validate_json(store.read(manifest.artifacts[RESULT]))
        assert raw.valid and raw.acceptance is not None, raw.invalid_reasons
        counted = _counter_al(store, manifest.artifacts)
        assert raw.acceptance.acceptance_length == pytest.approx(counted)
        assert 1.0 <= counted <= 1.0 + draft_tokens


def test_mtp_recipe_materializes_through_dagster_with_the_engines_acceptance(
    cpu_host: CpuHost, tmp_path: Path
) -> None:
    """``inferx materialize`` of the MTP recipe: the model's own MTP layer drafts."""
    before = _pids()
    root = smoke_root(tmp_path / "root", [f"tiny/{MTP_RECIPE}.yaml"], saturation=True)
    state = tmp_path / "state"
    env = {"INFERX_ROOT": str(root), "INFERX_STATE_DIR": str(state), "COLUMNS": "200"}
    args = ["materialize", "--recipe", MTP_RECIPE, "--launcher", "local"]
    args += ["--host-file", str(cpu_host.path), "--num-prompts", "8"]
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 0, result.output
    assert "SUCCESS" in result.output and "2 ok" in result.output, result.output
    assert _engine_processes(cpu_host.python, before) == [], "the engine stops with the run"
    _drafts_match_counters(ArtifactStore(state / "artifacts"), draft_tokens=1)
    results = ResultStore(f"sqlite:///{state / 'results.sqlite'}")
    try:
        rows = results.read_frame()
    finally:
        results.close()
    assert sorted(rows["conc"]) == [1, 4] and not rows["simulated"].any()
    assert set(rows["image_digest"]) == {"local:vllm==0.32.0+cpu"}
    assert set(rows["spec_method"]) == {"mtp"}


def test_eagle3_head_from_the_hf_cache_is_measured_from_the_engines_counters(
    cpu_host: CpuHost, tmp_path: Path
) -> None:
    """The EAGLE3 head is named by HF id and found in the host's (offline) HF cache."""
    store, _ = _sweep_local(cpu_host, tmp_path, f"tiny/{EAGLE3_RECIPE}.yaml", 4)
    _drafts_match_counters(store, draft_tokens=2)
