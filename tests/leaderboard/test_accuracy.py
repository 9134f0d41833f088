"""The accuracy page: per model and task, each configuration's score with its error bar,
threshold and gate state; checked as HTML and in headless Chromium (screenshot)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.leaderboard.accuracy import AccuracyGroup, accuracy_groups
from inferx_pipeline.leaderboard.build import build_site
from inferx_pipeline.leaderboard.config import LeaderboardConfig
from inferx_pipeline.leaderboard.serve import SiteServer
from inferx_pipeline.results.configs import CONFIG_FIELDS, config_id
from inferx_pipeline.results.gate import mark_rows
from tests.leaderboard.conftest import GENERATED_AT

DIGEST = "sha256:" + "d" * 64


def _eval(fp: str, conc: int, score: float, passed: bool, day: int, **over: Any) -> dict[str, Any]:
    row = {
        "fingerprint": f"{fp}-eval", "server_fingerprint": fp, "image_digest": DIGEST,
        "recipe_id": f"recipe-{fp}", "image": "lmsysorg/sglang:v0.5.9", "scenario": "fixed-seq-len",
        "model": "deepseek-ai/DeepSeek-R1-0528", "task": "gsm8k", "sku": "mi300x",
        "framework": "sglang", "precision": "fp8", "spec_method": "none", "tp": 8,
        "conc": conc, "exact_match": score, "exact_match_stderr": 0.01, "threshold": 0.91,
        "passed": passed, "n_effective": 1319, "dataset": "host", "simulated": True,
        "lm_eval_version": "0.4.13", "engine_version": "0.5.9",
        "finished_at": datetime(2026, 11, day, tzinfo=UTC),
    }  # fmt: skip
    return row | over | {"config_id": config_id(row | over)}


def _throughput(*scored: dict[str, Any]) -> pd.DataFrame:
    """Throughput rows of the configurations ``scored`` judge (their twins' fingerprints)."""
    columns = ["image_digest", *CONFIG_FIELDS]
    rows = pd.DataFrame(scored).reindex(columns=columns)
    return rows.assign(fingerprint=[row["server_fingerprint"] for row in scored])


@pytest.fixture(scope="module")
def groups() -> list[AccuracyGroup]:
    a, b = _eval("a", 64, 0.95, True, 1), _eval("b", 32, 0.93, True, 1, spec_method="mtp")
    evals = pd.DataFrame(
        [
            a,
            _eval("a", 64, 0.42, False, 2),  # re-scored: the newest wins
            b,
            _eval("c", 4, 0.0, True, 1, model="inferx/tiny-qwen3", task="gsm8k-inferx",
                  sku="cpu", framework="vllm", precision="bf16", tp=1, threshold=0.0),
        ]
    )  # fmt: skip
    return accuracy_groups(evals, mark_rows(_throughput(a, a, a, b), evals))


def test_groups_per_model_and_task_newest_score_best_first(groups: list[AccuracyGroup]) -> None:
    assert [(g.model, g.task) for g in groups] == [
        ("deepseek-ai/DeepSeek-R1-0528", "gsm8k"),
        ("inferx/tiny-qwen3", "gsm8k-inferx"),
    ]
    dsr1 = groups[0]
    assert [(r.label, r.score, r.passed, r.marked_rows) for r in dsr1.rows] == [
        ("mi300x · sglang · fp8 · spec mtp · TP8 · conc 32", 0.93, True, 0),
        ("mi300x · sglang · fp8 · no spec · TP8 · conc 64", 0.42, False, 3),
    ]
    assert dsr1.as_of == datetime(2026, 11, 2, tzinfo=UTC)


@pytest.fixture(scope="module")
def accuracy_site(
    tmp_path_factory: pytest.TempPathFactory, sweep: pd.DataFrame, catalog: Catalog,
    config: LeaderboardConfig, groups: list[AccuracyGroup],
) -> Path:  # fmt: skip
    out = tmp_path_factory.mktemp("accuracy") / "site"
    build_site(sweep, out, catalog, config, GENERATED_AT, accuracy=groups)
    return out


def test_the_page_shows_scores_thresholds_and_the_gate(accuracy_site: Path) -> None:
    html = (accuracy_site / "accuracy.html").read_text()
    assert html.count('<svg class="errorbar"') == 3
    assert "as of 2026-11-02" in html and "below threshold" in html
    assert "(3 throughput rows marked)" in html
    assert 'href="accuracy.html"' in (accuracy_site / "index.html").read_text()


@pytest.mark.chromium
def test_the_page_in_headless_chromium(
    chromium_browser: Any, accuracy_site: Path, tmp_path: Path
) -> None:
    with SiteServer(accuracy_site) as server:
        page = chromium_browser.new_page(viewport={"width": 1400, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(server.url + "accuracy.html", wait_until="load")
        sections = page.evaluate(
            "Array.from(document.querySelectorAll('section.accuracy')).map(s => s.dataset.task)"
        )
        widths = page.evaluate(
            "Array.from(document.querySelectorAll('svg.errorbar rect'))"
            ".map(r => r.getBoundingClientRect().width)"
        )
        shot = tmp_path / "accuracy-page.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"screenshot: {shot}")
        page.close()
    assert sections == ["gsm8k", "gsm8k-inferx"]
    assert [round(w) for w in widths] == [186, 84, 0]  # 200 px x score
    assert errors == [] and shot.stat().st_size > 5_000


def test_table_rows_show_their_configurations_score_and_badge(
    tmp_path: Path, sweep: pd.DataFrame, catalog: Catalog, config: LeaderboardConfig
) -> None:
    first = sweep.iloc[0]
    keys = ("model", "sku", "framework", "precision", "spec_method")
    same = {k: str(first[k]) for k in keys}
    score = _eval("x", 64, 0.42, False, 3, **same)
    evals = pd.DataFrame([score])
    marked = mark_rows(_throughput(score), evals)
    out = tmp_path / "site"
    build_site(sweep, out, catalog, config, GENERATED_AT, accuracy=accuracy_groups(evals, marked))
    html = (out / "table.html").read_text()
    scored = [line for line in html.splitlines() if 'class="num eval">0.420' in line]
    assert scored and all("below threshold" in line for line in scored)
    shown = sweep[(sweep[list(keys)].astype(str) == pd.Series(same)).all(axis=1)]
    assert not shown.empty


def test_a_score_without_an_engine_version_beside_one_with_it() -> None:
    """An imported InferenceX score has no engine version; in one frame with a scored one
    pandas holds it as NaN, which the page shows as no version, not an error."""
    known = _eval("a", 64, 0.95, True, 1)
    imported = _eval("b", 32, 0.93, True, 2, engine_version=None)
    evals = pd.DataFrame([known, imported])
    evals.loc[evals["engine_version"].isna(), "engine_version"] = float("nan")
    (group,) = accuracy_groups(evals, mark_rows(_throughput(known, imported), evals))
    assert sorted((row.engine_version for row in group.rows), key=str) == ["0.5.9", None]
