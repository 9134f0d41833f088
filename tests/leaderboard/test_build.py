"""Site build: the expected pages exist and carry the numbers the computations produce."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.errors import LeaderboardError
from inferx_pipeline.leaderboard.board import compute_leaderboard
from inferx_pipeline.leaderboard.build import SiteManifest, build_site, build_site_from_store
from inferx_pipeline.leaderboard.config import LeaderboardConfig
from inferx_pipeline.leaderboard.frame import current, prepare
from inferx_pipeline.leaderboard.pareto import pareto_front, pareto_mask
from inferx_pipeline.results.store import ResultStore
from tests.leaderboard.conftest import CATALOG_DIR, GENERATED_AT

_DATA = re.compile(r'<script type="application/json" id="page-data">(.*?)</script>', re.S)


def page_data(path: Path) -> dict:  # type: ignore[type-arg]  # parsed JSON
    match = _DATA.search(path.read_text())
    assert match, f"{path}: no embedded page data"
    return json.loads(match.group(1))


def test_expected_pages(built_site: tuple[Path, SiteManifest], sweep: pd.DataFrame) -> None:
    out, manifest = built_site
    kinds = [p.kind for p in manifest.pages]
    shown = current(prepare(sweep))
    assert kinds.count("overview") == kinds.count("table") == 1
    assert kinds.count("model") == len(shown.drop_duplicates(["model", "workload"]))
    assert kinds.count("history") == sweep["recipe_id"].nunique()
    for page in manifest.pages:
        assert (out / page.path).is_file(), page.path
    assert (out / "assets" / "plotly.min.js").stat().st_size > 1_000_000
    assert json.loads((out / "manifest.json").read_text())["counts"] == manifest.counts


def test_model_page_numbers_match_the_fronts(
    built_site: tuple[Path, SiteManifest], sweep: pd.DataFrame, catalog: Catalog,
    config: LeaderboardConfig,
) -> None:  # fmt: skip
    out, manifest = built_site
    page = next(p for p in manifest.pages if p.kind == "model")
    data = page_data(out / page.path)
    assert set(data["charts"]) == {"mean", "median", "p90", "p99"}
    assert set(data["charts"]["median"]) == {
        "throughput", "ttft", "e2el", "cost@on-demand", "cost@reserved-1y",
        "e2e-throughput", "e2e-cost@on-demand", "e2e-cost@reserved-1y",
    }  # fmt: skip
    shown = current(prepare(sweep))
    mine = shown.loc[(shown["model"] == data["model"]) & (shown["workload"] == data["workload"])]
    front = pareto_front(mine, "median")
    traces = list(data["charts"]["median"]["throughput"]["data"])
    want = sorted(zip(front["intvty_median"], front["tput_per_gpu"], strict=True))
    assert _front_points(traces) == pytest.approx([v for p in want for v in p])
    # The X-axis choice: the same points' fronts against E2E-normalized interactivity.
    e2e = data["charts"]["median"]["e2e-throughput"]
    e2e_front = mine.loc[pareto_mask(mine, "e2e_intvty_median")]
    want = sorted(zip(e2e_front["e2e_intvty_median"], e2e_front["tput_per_gpu"], strict=True))
    assert _front_points(e2e["data"]) == pytest.approx([v for p in want for v in p])
    assert e2e["layout"]["xaxis"]["title"]["text"].startswith(
        "E2E-normalized interactivity, median (tok/s/user"
    )
    assert traces[-1]["name"] == "non-optimal points" and traces[-1]["visible"] == "legendonly"
    hover = traces[0]["customdata"][0]
    assert hover[0] in set(mine["recipe_id"]) and hover[4] == "simulated"
    board = compute_leaderboard(sweep, catalog, config)
    expected = board.tiers.loc[(board.tiers["model"] == data["model"])
                               & (board.tiers["workload"] == data["workload"])]  # fmt: skip
    got = pd.DataFrame(data["tiers"]).merge(
        expected[["label", "tier", "tput_per_gpu"]], on=["label", "tier"], suffixes=("", "_want")
    )
    assert len(got) == len(expected) > 0
    assert got["tput_per_gpu"].to_numpy(float) == pytest.approx(
        got["tput_per_gpu_want"].to_numpy(float), nan_ok=True
    )


def _front_points(traces: list[dict]) -> list[float]:  # type: ignore[type-arg]  # parsed JSON
    """x, y, x, y ... of every front trace's points, sorted by point."""
    drawn = sorted((x, y) for t in traces if t["name"] != "non-optimal points"
                   for x, y in zip(t["x"], t["y"], strict=True))  # fmt: skip
    return [v for point in drawn for v in point]


def test_downloads_and_badges(built_site: tuple[Path, SiteManifest]) -> None:
    out, manifest = built_site
    csv = (out / "downloads" / "leaderboard.csv").read_text().splitlines()
    assert csv[0].startswith("# inferx-pipeline leaderboard.")
    assert csv[1] == f"# generated_at: {GENERATED_AT.isoformat()}"
    header = next(line for line in csv if not line.startswith("#"))
    assert header.startswith("model,workload,sku,vendor,framework,precision,spec_method")
    doc = json.loads((out / "downloads" / "leaderboard.json").read_text())
    assert doc["attribution"].startswith("inferx-pipeline leaderboard.")
    assert len(doc["rows"]) == manifest.counts["tier_values"]
    table = (out / "table.html").read_text()
    assert (
        table.count('<td><span class="badge">simulated</span></td>')
        == manifest.counts["tier_values"]
    )


def test_history_and_alerts(built_site: tuple[Path, SiteManifest]) -> None:
    out, manifest = built_site
    alerts = json.loads((out / "alerts.json").read_text())
    assert len(alerts["open"]) == manifest.counts["open_episodes"]
    assert len(alerts["open"]) + len(alerts["closed"]) == manifest.counts["episodes"] > 0
    regressed = alerts["closed"][0]["recipe_id"]
    page = next(p for p in manifest.pages if p.kind == "history" and p.title == regressed)
    data = page_data(out / page.path)
    assert data["chart"]["layout"]["shapes"], "the regressed images are shaded"
    assert len(data["chart"]["layout"]["xaxis"]["ticktext"]) == 7
    assert {e["metric"] for e in data["episodes"]} <= {
        "tput_per_gpu",
        "intvty_median",
        "ttft_median_s",
    }


def test_rebuild_replaces_and_foreign_directory_is_refused(
    tmp_path: Path, sweep: pd.DataFrame, catalog: Catalog, config: LeaderboardConfig
) -> None:
    out = tmp_path / "site"
    build_site(sweep, out, catalog, config, generated_at=GENERATED_AT)
    (out / "models" / "stale.html").write_text("old")
    build_site(sweep.iloc[: len(sweep) // 2], out, catalog, config, generated_at=GENERATED_AT)
    assert not (out / "models" / "stale.html").exists()
    foreign = tmp_path / "docs"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    with pytest.raises(LeaderboardError, match=r"is not a leaderboard build"):
        build_site(sweep, foreign, catalog, config)
    assert (foreign / "keep.txt").read_text() == "mine"


def test_builds_are_versioned_behind_a_symlink_and_only_two_are_kept(
    tmp_path: Path, sweep: pd.DataFrame, catalog: Catalog, config: LeaderboardConfig
) -> None:
    out = tmp_path / "site"
    seen = []
    for _ in range(3):
        build_site(sweep, out, catalog, config, generated_at=GENERATED_AT)
        assert out.is_symlink() and (out / "index.html").is_file()
        seen.append(out.readlink())
    assert not seen[0].is_absolute()  # the site still works when its folder moves
    kept = sorted(p.name for p in (tmp_path / "site.builds").iterdir())
    assert kept == sorted(p.name for p in seen[1:])


def test_a_site_directory_of_an_older_version_becomes_a_versioned_build(
    tmp_path: Path, sweep: pd.DataFrame, catalog: Catalog, config: LeaderboardConfig
) -> None:
    out = tmp_path / "site"
    out.mkdir()  # as builds before versioning left it: a real directory with a manifest
    (out / "manifest.json").write_text("{}")
    (out / "index.html").write_text("old")
    build_site(sweep, out, catalog, config, generated_at=GENERATED_AT)
    assert out.is_symlink() and (out / "index.html").read_text() != "old"
    [old] = [p for p in (tmp_path / "site.builds").iterdir() if p.name.endswith("-unversioned")]
    assert (old / "index.html").read_text() == "old"  # the previous build, kept until the next
    build_site(sweep, out, catalog, config, generated_at=GENERATED_AT)
    assert not old.exists()


def test_build_from_the_results_store(tmp_path: Path, sweep: pd.DataFrame) -> None:
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    store = ResultStore(url)
    try:
        assert store.write_frame(sweep).written == len(sweep)
    finally:
        store.close()
    manifest = build_site_from_store(url, tmp_path / "site", CATALOG_DIR, GENERATED_AT)
    assert manifest.counts["rows"] == len(sweep)
    assert (tmp_path / "site" / "index.html").is_file()
