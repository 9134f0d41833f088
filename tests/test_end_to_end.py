"""Seed recipes end to end: simulated sweep -> SQLite/PostgreSQL -> leaderboard pages, numbers.

One smoke-sized sweep of the four seed recipes (48 jobs) on the subprocess simulator is
shared by the module; each test publishes its artifacts into a fresh database (SQLite,
and the private PostgreSQL cluster) and checks the site against the stored rows with
computations written out here (dominance by brute force, tier values interpolated by hand,
cost from the catalog price). The last test is scripts/demo's leaderboard: the seeds plus
one seed's eval scored by lm-eval on the simulator, read in headless Chromium.
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from inferx_pipeline.bench.result import RawResult
from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.cli import cli
from inferx_pipeline.engines.sim import SimOptions
from inferx_pipeline.evals.harness import LmEvalHarness
from inferx_pipeline.leaderboard.build import build_site_from_store
from inferx_pipeline.leaderboard.serve import SiteServer
from inferx_pipeline.matrix.eval_catalog import load_eval_catalog
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.select import Selection
from inferx_pipeline.pipeline import Published, publish, stored_result_paths
from inferx_pipeline.plan.build import MatrixRequest, build_matrix
from inferx_pipeline.results.store import ResultStore
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.artifacts import ArtifactStore
from inferx_pipeline.sweep.backends import simulator_backend
from inferx_pipeline.sweep.evaluate import EvalSetup
from inferx_pipeline.sweep.report import SweepOptions, SweepReport
from inferx_pipeline.sweep.runner import run_sweep
from inferx_pipeline.sweep.status import load_policy
from tests.smoke import smoke_root

SEEDS = (
    "qwen3.827b-bf16-mi325x-vllm-mtp",
    "qwen3.5-fp8-mi300x-sglang-agentic-mtp",
    "qwen3.827b-fp8-h200-vllm-mtp",
    "minimaxm3-fp8-mi325x-vllm-agentic-mtp",
)
# Interactivity is 1000 / TPOT, and the client measures a request's TPOT from the first
# and last reads of its stream. At 50x real time a 1k/1k stream lasts ~0.1 s but an agentic
# turn (~100 tokens) a few ms: a client that sleeps through a whole stream on a loaded box
# reads it at once and measures no TPOT (TPOT 0, stored as null), and the point has no x
# on the charts. Four agentic turns give the median four streams; the site checks below
# hold for whichever points got a TPOT, and every point without one is checked against
# its raw result, so no timing decides pass or fail.
FAST_SIM = SimOptions(load_time_s=0, time_scale=0.02, startup_timeout_s=60)
FAST = SweepOptions(num_prompts=1, think_time_scale=0, max_turns=4)
PRICE_TIER = "on-demand"
# scripts/demo's eval: this seed's eval job, on the project's own GSM8K-format task with
# answers cut at 32 tokens (DEMO_EVAL_SEED, DEMO_EVAL_MAX_TOKENS there).
DEMO_EVAL_SEED = "minimaxm3-fp8-mi325x-vllm-agentic-mtp"
DEMO_EVAL_MAX_TOKENS = 32
# Columns that tell the points of one recipe apart (the job label) and one point.
POINT = ["recipe_id", "tp", "ep", "dp_attn", "kv_offload", "conc"]
FRONT_GROUP = ["model", "workload", "sku", "framework", "precision", "spec_method"]
_DATA = re.compile(r'<script type="application/json" id="page-data">(.*?)</script>', re.S)


@dataclass(frozen=True)
class Swept:
    """The module's sweep: its jobs, report, artifacts and the settings it ran under."""

    jobs: list[BenchmarkJob]
    report: SweepReport
    artifacts: ArtifactStore
    settings: Settings


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Swept]:
    base = tmp_path_factory.mktemp("e2e")
    with pytest.MonkeyPatch.context() as env:
        # Read by the in-process client and by each simulator child (it inherits it).
        env.setenv("INFERX_ROOT", str(smoke_root(base / "root")))
        env.setenv("INFERX_STATE_DIR", str(base / "state"))
        settings = Settings()
        selection = Selection(recipes=SEEDS)
        jobs = build_matrix(MatrixRequest(paths=(), selection=selection), settings)
        artifacts = ArtifactStore(settings.artifacts_dir)
        catalog = cached_catalog(settings.catalog_dir)
        report = run_sweep(
            jobs,
            backend=simulator_backend(catalog, base / "logs", FAST_SIM),
            artifacts=artifacts,
            policy=load_policy(settings.catalog_dir),
            options=FAST,
        )
        yield Swept(jobs, report, artifacts, settings)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty results database: a SQLite file, or a fresh database on the private cluster."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'results.sqlite'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


def _publish(swept: Swept, url: str, site: Path) -> Published:
    return publish(swept.artifacts, url, site, swept.settings.catalog_dir)


def _rows(url: str) -> pd.DataFrame:
    store = ResultStore(url)
    try:
        return store.read_frame()
    finally:
        store.close()


def _workload(row: pd.Series) -> str:
    sizes = ""
    if pd.notna(row["isl"]):
        sizes = f" {int(row['isl']) // 1024}k/{int(row['osl']) // 1024}k"
    thinking = "" if row["thinking"] == "none" else f" thinking-{row['thinking']}"
    return f"{row['scenario']}{sizes}{thinking}"


FrontPoints = list[tuple[float, float, tuple[object, ...]]]


def _brute_force_fronts(
    rows: pd.DataFrame, x: str, y: str
) -> dict[tuple[object, ...], FrontPoints]:
    """Per group, the (x, y, point) of every point no other point of the group matches on
    both axes and beats on one, by ascending x."""
    fronts = {}
    for group_key, group in rows.groupby(FRONT_GROUP):
        points = list(group[[x, y, *POINT]].itertuples(index=False, name=None))
        front = [
            (px, py, tuple(key))
            for px, py, *key in points
            if not any(qx >= px and qy >= py and (qx > px or qy > py) for qx, qy, *_ in points)
        ]
        fronts[group_key] = sorted(front, key=lambda point: (point[0], point[1]))
    return fronts


def _brute_force_front(rows: pd.DataFrame, x: str, y: str) -> set[tuple[object, ...]]:
    """The points on their group's front."""
    return {key for front in _brute_force_fronts(rows, x, y).values() for _, _, key in front}


def _page_data(path: Path) -> dict[str, Any]:
    match = _DATA.search(path.read_text())
    assert match, f"{path}: no embedded page data"
    data: dict[str, Any] = json.loads(match.group(1))
    return data


def _kept(rows: pd.DataFrame) -> pd.Series:
    """Rows the leaderboard keeps: valid, ok, with throughput."""
    return rows["valid"] & (rows["status"] == "ok") & (rows["tput_per_gpu"] > 0)


def _shown(rows: pd.DataFrame) -> pd.DataFrame:
    """Kept rows with interactivity (a point without a TPOT has no x to be drawn at)."""
    shown = rows.loc[_kept(rows) & (rows["intvty_median"] > 0)].copy()
    shown["workload"] = shown.apply(_workload, axis=1)
    return shown


def test_the_sweep_measured_every_seed_job(swept: Swept) -> None:
    assert len(swept.jobs) == 48
    assert swept.report.counts() == {"ok": 48}
    assert len(stored_result_paths(swept.artifacts)) == 48


def test_one_row_per_job_and_ingest_is_idempotent(
    swept: Swept, store_url: str, tmp_path: Path
) -> None:
    first = _publish(swept, store_url, tmp_path / "site")
    assert (first.ingest.written, first.ingest.quarantined) == (48, 0)
    site = tmp_path / "site"
    args = ["publish", "--artifacts-dir", str(swept.artifacts.root), "--db", store_url]
    again = CliRunner().invoke(cli, [*args, "--out", str(site)])
    assert again.exit_code == 0, again.output
    lines = again.output.splitlines()
    assert lines[0] == "ingested 0 results (48 already stored), quarantined 0"
    assert lines[-1] == str(site / "index.html") and (site / "index.html").is_file()
    rows = _rows(store_url)
    assert len(rows) == 48
    wanted = {(job.fingerprint, job.conc) for job in swept.jobs}
    assert set(zip(rows["fingerprint"], rows["conc"], strict=True)) == wanted
    assert set(rows["recipe_id"]) == set(SEEDS)


def test_per_gpu_throughput_and_interactivity_come_from_the_raw_result(
    swept: Swept, store_url: str, tmp_path: Path
) -> None:
    _publish(swept, store_url, tmp_path / "site")
    for row in _rows(store_url).itertuples():
        raw = RawResult.model_validate_json(swept.artifacts.read(row.artifact_sha256))
        assert row.gpus == row.tp
        assert row.tput_per_gpu == pytest.approx(raw.total_token_throughput / row.gpus)
        assert row.simulated and not row.official
        # Null exactly where the client measured no TPOT (every stream read at once).
        if raw.median_tpot_ms:
            assert row.intvty_median == pytest.approx(1000 / raw.median_tpot_ms)
            assert row.tpot_median_s == pytest.approx(raw.median_tpot_ms / 1000)
        else:
            assert pd.isna(row.intvty_median) and pd.isna(row.tpot_median_s), row.job_id


def test_site_pages_fronts_costs_and_badges(swept: Swept, store_url: str, tmp_path: Path) -> None:
    published = _publish(swept, store_url, tmp_path / "site")
    site = tmp_path / "site"
    rows = _rows(store_url)
    assert len(rows) == 48 and _kept(rows).all(), "the smoke policy keeps every measured point"
    # A row without interactivity is one whose client measured no TPOT (each is tied to
    # its raw result by the test above); the site draws every other row and none of these.
    shown = _shown(rows)
    pages = {p.title: p.path for p in published.site.pages if p.kind == "model"}
    expected_pages = {
        f"{m} · {w}" for m, w in set(zip(shown["model"], shown["workload"], strict=True))
    }
    assert set(pages) == expected_pages
    front = _brute_force_front(shown, "intvty_median", "tput_per_gpu")
    drawn: set[tuple[object, ...]] = set()
    on_front: set[tuple[object, ...]] = set()
    for title, rel in pages.items():
        charts = _page_data(site / rel)["charts"]["median"]
        for trace in charts["throughput"]["data"]:
            assert {point[4] for point in trace["customdata"]} == {"simulated"}, title
            points = _drawn_points(trace, shown)
            drawn |= points
            if trace["name"] != "non-optimal points":
                on_front |= points
    assert on_front == front
    assert drawn == set(shown[POINT].itertuples(index=False, name=None))
    _check_front_download(site, shown, front, swept.settings)


def _drawn_points(trace: dict[str, Any], shown: pd.DataFrame) -> set[tuple[object, ...]]:
    points = set()
    for x, y in zip(trace["x"], trace["y"], strict=True):
        hit = shown.loc[(shown["intvty_median"] == x) & (shown["tput_per_gpu"] == y)]
        assert len(hit) == 1, f"drawn point ({x}, {y}) is not one stored row"
        points.add(tuple(hit[POINT].iloc[0]))
    return points


def _check_front_download(
    site: Path, shown: pd.DataFrame, front: set[tuple[object, ...]], settings: Settings
) -> None:
    document = json.loads((site / "downloads" / "front.json").read_text())
    table = pd.DataFrame(document["rows"])
    assert {tuple(key) for key in table[POINT].itertuples(index=False)} == front
    merged = table.merge(shown, on=POINT, suffixes=("", "_db"))
    assert len(merged) == len(front)
    prices = cached_catalog(settings.catalog_dir).prices.prices
    for row in merged.to_dict("records"):
        assert row["tput_per_gpu"] == pytest.approx(row["tput_per_gpu_db"])
        assert row["intvty_median"] == pytest.approx(row["intvty_median_db"])
        price = prices[row["sku"]][PRICE_TIER]
        want = price / (row["tput_per_gpu_db"] * 3600 / 1e6)
        assert row[f"usd_per_m_total@{PRICE_TIER}"] == pytest.approx(want)
        assert row["badge"] == "simulated"
    badge = '<td><span class="badge">simulated</span></td>'
    tier_rows = json.loads((site / "downloads" / "leaderboard.json").read_text())["rows"]
    assert (site / "table.html").read_text().count(badge) == len(tier_rows) > 0


def _tiers_across(fronts: dict[tuple[object, ...], FrontPoints]) -> list[float]:
    """Midway between every two adjacent front points, plus one tier below and one above all."""
    xs = [x for front in fronts.values() for x, _, _ in front]
    tiers = {min(xs) / 2, max(xs) * 2}
    for front in fronts.values():
        tiers |= {(a[0] + b[0]) / 2 for a, b in itertools.pairwise(front) if a[0] < b[0]}
    return sorted(tiers)


def _by_hand(front: FrontPoints, tier: float) -> tuple[str, float | None]:
    """The tier value read off a front: linear between its bracketing points, never beyond."""
    if tier > front[-1][0]:
        return "not_reached", None
    if tier < front[0][0]:
        return "below_range", None
    lo = [p for p in front if p[0] <= tier][-1]
    hi = next(p for p in front if p[0] >= tier)
    if hi[0] == lo[0]:
        return "ok", lo[1]
    return "ok", lo[1] + (tier - lo[0]) / (hi[0] - lo[0]) * (hi[1] - lo[1])


def _catalog_with(
    settings: Settings, root: Path, name: str, edit: Callable[[dict[str, Any]], None]
) -> Path:
    """``root/catalog``: the smoke catalog with the YAML file ``name`` changed by ``edit``."""
    catalog = root / "catalog"
    catalog.mkdir()
    for source in settings.catalog_dir.iterdir():
        if source.name != name:
            (catalog / source.name).symlink_to(source.resolve())
    doc = yaml.safe_load((settings.catalog_dir / name).read_text())
    edit(doc)
    (catalog / name).write_text(yaml.safe_dump(doc, sort_keys=False))
    return catalog


def _catalog_with_tiers(settings: Settings, tiers: list[float], root: Path) -> Path:
    """The smoke catalog with ``tiers`` as the leaderboard's interactivity tiers (for
    every scenario)."""

    def edit(policy: dict[str, Any]) -> None:
        policy.update(tiers=tiers, headline_tier=tiers[0], scenario_tiers={})

    return _catalog_with(settings, root, "leaderboard.yaml", edit)


def test_tier_values_are_the_seed_fronts_interpolated_by_hand(swept: Swept, tmp_path: Path) -> None:
    # The catalog's tiers (30-100 tok/s/user) lie far below what a 50x simulator reaches;
    # tiers placed from the stored fronts make every group interpolate, or report a tier
    # above or below its front, whatever interactivity this run measured.
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    _publish(swept, url, tmp_path / "site")
    fronts = _brute_force_fronts(_shown(_rows(url)), "intvty_median", "tput_per_gpu")
    tiers = _tiers_across(fronts)
    catalog = _catalog_with_tiers(swept.settings, tiers, tmp_path)
    build_site_from_store(url, tmp_path / "tiered", catalog)
    document = json.loads((tmp_path / "tiered" / "downloads" / "leaderboard.json").read_text())
    got = {
        (tuple(row[k] for k in FRONT_GROUP), row["tier"]): (row["status"], row["tput_per_gpu"])
        for row in document["rows"]
    }
    want = {(key, t): _by_hand(front, t) for key, front in fronts.items() for t in tiers}
    assert got.keys() == want.keys()
    for key, (status, value) in want.items():
        assert got[key][0] == status, key
        assert got[key][1] == (None if value is None else pytest.approx(value)), key


def test_a_failed_rerun_loses_no_earlier_result(swept: Swept, tmp_path: Path) -> None:
    artifacts = ArtifactStore(tmp_path / "artifacts")
    shutil.copytree(swept.artifacts.root, artifacts.root)
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    catalog_dir = swept.settings.catalog_dir
    before = publish(artifacts, url, tmp_path / "site", catalog_dir)
    recipe = [job for job in swept.jobs if job.recipe_id == SEEDS[0]]
    failed = run_sweep(
        recipe,
        backend=simulator_backend(cached_catalog(catalog_dir), tmp_path / "logs", FAST_SIM),
        artifacts=artifacts,
        policy=load_policy(catalog_dir),
        options=FAST.model_copy(update={"force": True, "point_deadline_s": 1e-6}),
    )
    assert failed.counts() == {"result-invalid": 8}
    after = publish(artifacts, url, tmp_path / "site", catalog_dir)
    assert after.ingest.skipped_existing == 48 and after.ingest.written == 8
    rows = _rows(url)
    first = rows.loc[rows["attempt"] == 1].sort_values(POINT)
    assert len(first) == 48 and first["valid"].all()
    retried = rows.loc[rows["attempt"] == 2]
    assert len(retried) == 8 and not retried["valid"].any()
    assert after.site.counts["front_points"] == before.site.counts["front_points"]


def _demo_eval_catalog(settings: Settings, root: Path) -> Path:
    """The smoke catalog with scripts/demo's eval: default task the shipped GSM8K-format
    one (no host datasets cache here), answers cut at ``DEMO_EVAL_MAX_TOKENS``."""

    def edit(evals: dict[str, Any]) -> None:
        evals["default"]["task"] = "gsm8k-inferx"
        evals["protocol"]["max-tokens"] = DEMO_EVAL_MAX_TOKENS

    return _catalog_with(settings, root, "evals.yaml", edit)


@pytest.mark.chromium
@pytest.mark.timeout(900)  # lm-eval starts in 20-60 s on 2 busy cores
def test_the_demo_leaderboard_lists_every_seed_and_a_simulated_score(
    swept: Swept, chromium_browser: Any, lm_eval_python: Path, tmp_path: Path
) -> None:
    artifacts = ArtifactStore(tmp_path / "artifacts")
    shutil.copytree(swept.artifacts.root, artifacts.root)
    catalog_dir = _demo_eval_catalog(swept.settings, tmp_path)
    request = MatrixRequest(
        paths=(), selection=Selection(recipes=(DEMO_EVAL_SEED,)), evals="evals-only"
    )
    [eval_job] = build_matrix(request, swept.settings)
    setup = EvalSetup(
        load_eval_catalog(catalog_dir), LmEvalHarness(), lm_eval_python, tmp_path / "hf-home"
    )
    report = run_sweep(
        [eval_job],
        backend=simulator_backend(cached_catalog(catalog_dir), tmp_path / "logs", FAST_SIM),
        artifacts=artifacts,
        policy=load_policy(catalog_dir),
        options=FAST,
        evals=setup,
    )
    assert report.counts() == {"ok": 1}, report.outcomes
    site = tmp_path / "site"
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    published = publish(artifacts, url, site, catalog_dir)
    assert (published.ingest.written, published.evals.written) == (48, 1), published.evals
    seeds = _rows(url).drop_duplicates("recipe_id")
    with SiteServer(site) as server:
        page = chromium_browser.new_page(viewport={"width": 1400, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(server.url + "index.html", wait_until="load")
        sections = page.locator("section.ranking")
        listed = set(zip(
            sections.evaluate_all("s => s.map(e => e.dataset.model)"),
            sections.evaluate_all("s => s.map(e => e.dataset.workload)"), strict=True,
        ))  # fmt: skip
        # Every seed's model and workload has its section, reached or not.
        assert listed == set(zip(seeds["model"], seeds.apply(_workload, axis=1), strict=True))
        overview = page.inner_text("main")
        for seed in seeds.itertuples():
            label = f"{seed.sku} · {seed.framework} · {seed.precision} · {seed.spec_method}"
            assert label in overview, label
        _screenshot(page, tmp_path / "demo-overview.png")
        page.goto(server.url + "accuracy.html", wait_until="load")
        row = page.locator("section.accuracy tbody tr")
        assert row.count() == 1
        cells = row.first.inner_text()
        assert "0.000" in cells and "simulated" in cells and "below threshold" in cells
        _screenshot(page, tmp_path / "demo-accuracy.png")
        assert errors == []
        page.close()


def _screenshot(page: Any, path: Path) -> None:
    page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")
    assert path.stat().st_size > 10_000
