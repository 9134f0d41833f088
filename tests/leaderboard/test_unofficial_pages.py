"""The unofficial-run pages: written per run found in the store, listed in an index, with
the run's points and evals; the official pages byte for byte as without any PR rows."""

from __future__ import annotations

import filecmp
import hashlib
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.leaderboard.build import SiteManifest, build_site, build_site_from_store
from inferx_pipeline.leaderboard.config import LeaderboardConfig
from inferx_pipeline.leaderboard.serve import SiteServer
from inferx_pipeline.leaderboard.source import read_site_inputs
from inferx_pipeline.leaderboard.synthetic import synthetic_frame
from inferx_pipeline.leaderboard.unofficial import run_dir
from inferx_pipeline.results.eval_record import EvalRecord
from inferx_pipeline.results.evals import write_evals
from inferx_pipeline.results.store import ResultStore
from tests.leaderboard.conftest import CATALOG_DIR, GENERATED_AT
from tests.leaderboard.test_build import page_data

HEAD = {7: "a1b2c3d" + "0" * 33, 9: "feed123" + "0" * 33}


@pytest.fixture(scope="module")
def official(catalog: Catalog) -> pd.DataFrame:
    """Two recipes x two images x 72 points."""
    return synthetic_frame(catalog, 300, images=2, seed=3)


def _pr_rows(official: pd.DataFrame, number: int, recipe: str, day: int) -> pd.DataFrame:
    """The newest image's tp8 1k/1k points of ``recipe``, measured again by PR ``number``
    10 % faster, the last one failed."""
    mine = official.loc[(official["recipe_id"] == recipe) & (official["image_tag"] == "v001")
                        & (official["tp"] == 8) & (official["isl"] == 1024)
                        & (official["osl"] == 1024)].copy()  # fmt: skip
    ids = [hashlib.sha256(f"{number}{i}".encode()).hexdigest() for i in range(len(mine))]
    mine = mine.assign(
        result_id=ids, artifact_sha256=ids, run_id=f"pr-{number}-run", pr_number=number,
        head_sha=HEAD[number], official=False, tput_per_gpu=mine["tput_per_gpu"] * 1.1,
        finished_at=pd.Timestamp(GENERATED_AT) + timedelta(days=day),
    )  # fmt: skip
    mine.loc[mine.index[-1], ["status", "valid", "tput_per_gpu"]] = ["failed", False, 0.0]
    return mine


@pytest.fixture(scope="module")
def pulls(official: pd.DataFrame) -> pd.DataFrame:
    first, second = sorted(official["recipe_id"].unique())
    return pd.concat(
        [_pr_rows(official, 7, first, day=2), _pr_rows(official, 9, second, day=1)],
        ignore_index=True,
    )


def _eval(run_id: str, recipe: str, score: float, pr: int | None = None) -> EvalRecord:
    digest = hashlib.sha256(f"{run_id}{recipe}{score}".encode()).hexdigest()
    return EvalRecord(
        result_id=digest, recipe_id=recipe, fingerprint="e" * 64, server_fingerprint="s" * 64,
        config_id=None, job_id=f"{recipe}/eval", model="deepseek-ai/DeepSeek-R1-0528",
        model_family="dsr1", precision="fp8", sku="h200", framework="vllm",
        image="vllm/server:v1", image_digest=None, engine_version=None,
        scenario="fixed-seq-len", isl=1024, osl=1024, tp=8, ep=1, dp_attn=False,
        spec_method="none", thinking="none", conc=32, task="gsm8k", lm_eval_task="gsm8k",
        dataset="host", exact_match=score, exact_match_stderr=0.01, scores="{}",
        n_original=1319, n_effective=1319, threshold=0.5, threshold_source="evals.yaml",
        passed=score >= 0.5, lm_eval_version="0.4.13", run_id=run_id, attempt=1,
        simulated=True, finished_at=GENERATED_AT, samples_sha256=digest,
        artifact_sha256=digest, artifacts="{}", source="inferx", pr_number=pr,
    )  # fmt: skip


def _site(tmp: Path, frame: pd.DataFrame, evals: list[EvalRecord]) -> tuple[Path, SiteManifest]:
    url = f"sqlite:///{tmp / 'results.sqlite'}"
    store = ResultStore(url)
    try:
        store.write_frame(frame)
        write_evals(store, evals)
    finally:
        store.close()
    return tmp / "site", build_site_from_store(url, tmp / "site", CATALOG_DIR, GENERATED_AT)


@pytest.fixture(scope="module")
def sites(
    tmp_path_factory: pytest.TempPathFactory, official: pd.DataFrame, pulls: pd.DataFrame
) -> dict[str, tuple[Path, SiteManifest]]:
    recipe = str(official["recipe_id"].iloc[0])
    kept = _eval("run-1", recipe, 0.93)
    both = pd.concat([official, pulls], ignore_index=True)
    return {
        "official": _site(tmp_path_factory.mktemp("official"), official, [kept]),
        # The PR's eval scores 0.1: were it on the official accuracy page, it would differ.
        "both": _site(tmp_path_factory.mktemp("both"), both,
                      [kept, _eval("pr-7-run", recipe, 0.1, pr=7)]),
    }  # fmt: skip


def _official_files(root: Path) -> list[str]:
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and p.name != "manifest.json" and "unofficial" not in p.parts
    )


def test_official_pages_are_identical_with_and_without_pr_rows(
    sites: dict[str, tuple[Path, SiteManifest]],
) -> None:
    (alone, _), (mixed, _) = sites["official"], sites["both"]
    files = _official_files(alone.resolve())
    assert files == _official_files(mixed.resolve()) and "accuracy.html" in files
    _, mismatch, errors = filecmp.cmpfiles(alone, mixed, files, shallow=False)
    assert (mismatch, errors) == ([], [])
    assert "0.930" in (alone / "accuracy.html").read_text()


def test_the_frame_path_keeps_pr_rows_off_the_official_pages_too(
    tmp_path: Path, official: pd.DataFrame, pulls: pd.DataFrame, catalog: Catalog,
    config: LeaderboardConfig,
) -> None:  # fmt: skip
    alone = build_site(official, tmp_path / "a", catalog, config, GENERATED_AT)
    both = pd.concat([official, pulls], ignore_index=True)
    mixed = build_site(both, tmp_path / "b", catalog, config, GENERATED_AT)
    files = _official_files((tmp_path / "a").resolve())
    _, mismatch, _ = filecmp.cmpfiles(tmp_path / "a", tmp_path / "b", files, shallow=False)
    assert mismatch == [] and alone.counts["rows"] == mixed.counts["rows"] == len(official)
    assert mixed.counts["unofficial_runs"] == 2 and alone.counts["unofficial_runs"] == 0


def test_each_run_gets_its_pages_and_the_index_lists_them_newest_first(
    sites: dict[str, tuple[Path, SiteManifest]],
) -> None:
    out, manifest = sites["both"]
    paths = {(p.kind, p.path) for p in manifest.pages if p.kind.startswith("unofficial")}
    assert paths == {
        ("unofficial-runs", "unofficial/index.html"),
        ("unofficial-run", "unofficial/pr-7-run/index.html"),
        ("unofficial-accuracy", "unofficial/pr-7-run/accuracy.html"),
        ("unofficial-run", "unofficial/pr-9-run/index.html"),
        ("unofficial-accuracy", "unofficial/pr-9-run/accuracy.html"),
    }
    index = (out / "unofficial" / "index.html").read_text()
    assert re.findall(r'data-run="([^"]+)"', index) == ["pr-7-run", "pr-9-run"]
    assert "<td>#7</td><td><code>a1b2c3d</code></td>" in index
    assert '<a href="pr-9-run/index.html">pr-9-run</a>' in index
    assert str((GENERATED_AT + timedelta(days=2)).date()) in index
    empty = (sites["official"][0] / "unofficial" / "index.html").read_text()
    assert 'id="no-runs"' in empty


def test_the_run_page_shows_every_point_beside_its_baseline(
    sites: dict[str, tuple[Path, SiteManifest]], pulls: pd.DataFrame
) -> None:
    out, _ = sites["both"]
    page = out / "unofficial" / "pr-7-run" / "index.html"
    html = page.read_text()
    mine = pulls.loc[pulls["run_id"] == "pr-7-run"]
    shown = dict(re.findall(r'data-result="([0-9a-f]{64})" data-state="(\w+)"', html))
    assert set(shown) == set(mine["result_id"])
    failed = mine.loc[mine["status"] == "failed", "result_id"].item()
    assert shown.pop(failed) == "failed" and set(shown.values()) == {"compared"}
    assert html.count('<tr data-tier="') == 4 and "50 (headline)" in html
    assert 'href="../../assets/site.css"' in html and "PR #7 @ <code>" in html
    [chart] = page_data(page)["charts"]
    names = {trace["name"] for trace in chart["data"]}
    recipe = mine["recipe_id"].iloc[0]
    assert {"PR #7 @ a1b2c3d", f"baseline {recipe}"} <= names
    pr_x = [x for t in chart["data"] if t["name"].startswith("PR #7") for x in t["x"]]
    assert sorted(pr_x) == pytest.approx(sorted(mine.loc[mine["valid"], "intvty_median"]))


def test_the_accuracy_page_shows_the_runs_evals_or_says_there_are_none(
    sites: dict[str, tuple[Path, SiteManifest]],
) -> None:
    out, _ = sites["both"]
    scored = (out / "unofficial" / "pr-7-run" / "accuracy.html").read_text()
    assert 'class="num score">0.100' in scored and "below threshold" in scored
    assert 'id="no-evals"' not in scored
    unscored = (out / "unofficial" / "pr-9-run" / "accuracy.html").read_text()
    assert "This run scored no evals." in unscored and "<section" not in unscored


def test_a_run_id_that_is_no_path_segment_gets_a_distinct_slug() -> None:
    assert run_dir("3f2a9c1e-77d0-4c55-9f59-2b1c9a0e0d11") == "3f2a9c1e-77d0-4c55-9f59-2b1c9a0e0d11"
    odd = run_dir("import/2026 11 02")
    assert re.fullmatch(r"import-2026-11-02-[0-9a-f]{8}", odd) and odd != run_dir(
        "import/2026-11-02"
    )
    assert run_dir("..") != ".." and "/" not in run_dir("../x")


@pytest.mark.chromium
def test_the_run_page_in_headless_chromium(
    chromium_browser: Any, sites: dict[str, tuple[Path, SiteManifest]], tmp_path: Path
) -> None:
    out, _ = sites["both"]
    with SiteServer(out) as server:
        page = chromium_browser.new_page(viewport={"width": 1400, "height": 1000})
        errors: list[str] = []
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(server.url + "unofficial/pr-7-run/index.html", wait_until="load")
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length === 1")
        names = page.evaluate("document.getElementById('chart-0').data.map(t => t.name)")
        shot = tmp_path / "unofficial-run.png"
        page.screenshot(path=str(shot), full_page=True)
        page.close()
    assert "PR #7 @ a1b2c3d" in names and errors == []
    assert shot.stat().st_size > 10_000


def test_side_by_side_or_in_one_process_the_site_is_the_same(
    tmp_path: Path, official: pd.DataFrame, pulls: pd.DataFrame, catalog: Catalog,
    config: LeaderboardConfig,
) -> None:  # fmt: skip
    # Every kind of page: official ones, unofficial runs, the accuracy page with a score.
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    store = ResultStore(url)
    try:
        store.write_frame(pd.concat([official, pulls], ignore_index=True))
        recipe = str(official["recipe_id"].iloc[0])
        write_evals(store, [_eval("run-1", recipe, 0.93), _eval("pr-7-run", recipe, 0.1, pr=7)])
        read = read_site_inputs(store, config)
    finally:
        store.close()
    manifests = {
        side_by_side: build_site(
            read.history, tmp_path / str(side_by_side), catalog, config, GENERATED_AT,
            read.latest, read.accuracy, read.unofficial, side_by_side=side_by_side,
        )
        for side_by_side in (True, False)
    }  # fmt: skip
    one, two = ((tmp_path / str(side)).resolve() for side in (True, False))
    files = sorted(p.relative_to(one).as_posix() for p in one.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(two).as_posix() for p in two.rglob("*") if p.is_file())
    assert {"accuracy.html", "unofficial/index.html", "alerts.json"} <= set(files)
    _, mismatch, errors = filecmp.cmpfiles(one, two, files, shallow=False)
    assert errors == [] and mismatch == ["manifest.json"]  # which names its own folder
    same = {side: m.model_copy(update={"out_dir": ""}) for side, m in manifests.items()}
    assert same[True] == same[False] and same[True].counts["unofficial_runs"] == 2
