"""A PR run's report and unofficial-run page, read in headless Chromium, against the rows
stored for it.

The PR adds the BF16 MI325X seed recipe and names the FP8 H200 seed as its baseline,
whose official points are on the base branch. The report (GitHub-flavoured Markdown,
rendered to HTML as the PR comment shows it) and the run's page on the site must show
every point of the run with the stored values, printed at the report's precision, beside
the baseline recipe's official values at the same concurrency.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from markdown_it import MarkdownIt

from inferx_pipeline.leaderboard.compare import METRICS, metric_column
from inferx_pipeline.leaderboard.config import load_leaderboard_config
from inferx_pipeline.leaderboard.pr_report import FORMATS
from inferx_pipeline.leaderboard.serve import SiteServer
from inferx_pipeline.leaderboard.source import SHOWN
from inferx_pipeline.leaderboard.unofficial import run_dir
from inferx_pipeline.results.filters import ResultFilter
from inferx_pipeline.results.store import ResultStore
from tests.paths import ROOT
from tests.prs.pulls import Forge, recipe_file

SEED, BASELINE = "qwen3.827b-bf16-mi325x-vllm-mtp", "qwen3.827b-fp8-h200-vllm-mtp"
ARROW = "→"
# Every row of a table as the browser lays it out: the text of each cell.
TABLE_ROWS = """(table) => [...table.querySelectorAll('tbody tr')].map(
    tr => [...tr.querySelectorAll('td')].map(td => td.innerText.trim()))"""


def _printed(value: float | None, metric: str) -> str:
    """A stored value as the report prints it: scaled, fixed decimals; '-' for none."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    _, scale, decimals = FORMATS[metric]  # type: ignore[index]
    return f"{float(value) * scale:.{decimals}f}"


def _sides(text: str) -> tuple[str | None, str]:
    """``(baseline, PR)`` of a cell ``baseline → PR (Δ, Δ%)``, or ``(None, PR)``."""
    if ARROW not in text:
        return None, text
    baseline, rest = text.split(ARROW)
    return baseline.strip(), rest.strip().split(" (")[0]


def _rows(forge: Forge, filters: ResultFilter) -> pd.DataFrame:
    store = ResultStore(forge.settings.results_url)
    try:
        return store.read_frame(filters)
    finally:
        store.close()


def _check_points(cells: list[list[str]], headers: list[str], ours: pd.DataFrame,
                  official: pd.DataFrame, stat: str, where: str) -> None:  # fmt: skip
    """Each table row (one point) against its stored row and the baseline's shown official
    row at the same concurrency: both values when both exist, the PR's alone when the
    baseline has none there, ``-`` for a point of the run that is not valid."""
    column = {name: headers.index(name) for name in ("conc", "result")}
    assert len(cells) == len(ours), f"{where}: {len(cells)} rows for {len(ours)} stored"
    for cell in cells:
        mine = ours.loc[ours["result_id"].str.startswith(cell[column["result"]])]
        assert len(mine) == 1, f"{where}: {cell[column['result']]} is no stored row of the run"
        row = mine.iloc[0]
        assert int(cell[column["conc"]]) == row["conc"]
        theirs = official.loc[official["conc"] == row["conc"]]
        assert len(theirs) <= 1, f"{where}: two official points at c{row['conc']}"
        for metric in METRICS:
            name = metric_column(metric, stat)
            header = next(h for h in headers if h.startswith(FORMATS[metric][0]))
            text = cell[headers.index(header)]
            if not (row["valid"] and row["status"] == "ok"):
                assert text == "-", (where, metric, cell)
                continue
            baseline, pr = _sides(text)
            assert pr == _printed(row[name], metric), (where, metric, cell)
            expected = None if theirs.empty else _printed(theirs.iloc[0][name], metric)
            assert baseline == expected, (where, metric, cell)


@pytest.mark.chromium
def test_the_report_and_the_run_page_show_the_stored_rows(
    forge: Forge, chromium_browser: Any, tmp_path: Path
) -> None:
    base = forge.start(SEED)
    with ThreadPoolExecutor(1) as pool:
        pool.submit(forge.official, base, BASELINE).result()
    path = recipe_file(SEED)
    body = f"Adds the BF16 MI325X recipe.\n\nBaseline recipe: {BASELINE}\n"
    forge.open_pr(40, {path: (ROOT / path).read_text()}, ["full-sweep-fail-fast"], body=body)
    # Playwright's sync API keeps an event loop running in this thread; the sweep's client
    # runs its own, so the PR runs in another thread.
    with ThreadPoolExecutor(1) as pool:
        outcome = pool.submit(forge.run, 40).result()
    assert outcome.state == "swept" and outcome.report is not None and outcome.run_id
    stat = load_leaderboard_config(forge.settings.catalog_dir).default_stat
    ours = _rows(forge, ResultFilter(pull_requests="only", run_ids=(outcome.run_id,)))
    # The baseline's points as the leaderboard shows them (valid, ok, drawable).
    official = _rows(forge, SHOWN.model_copy(update={"recipe_ids": (BASELINE,)}))
    assert len(ours) == 8 and len(official) > 4

    # The report as GitHub renders the comment: GFM tables.
    html = MarkdownIt("commonmark").enable("table").render(outcome.report.read_text())
    rendered = tmp_path / "report.html"
    rendered.write_text(f"<!doctype html><meta charset=utf-8><body>{html}</body>")
    page = chromium_browser.new_page()
    try:
        page.goto(rendered.as_uri())
        points = page.locator("table", has=page.locator("th", has_text="result"))
        headers = points.locator("thead th").all_inner_texts()
        _check_points(points.evaluate(TABLE_ROWS), headers, ours, official, stat, "report")
        assert "(named in the PR)" in page.inner_text("body")
    finally:
        page.close()

    # The run's page on the site, from the link the report carries.
    link = f"unofficial/{run_dir(outcome.run_id)}/index.html"
    assert link in outcome.report.read_text()
    with SiteServer(forge.settings.site_dir) as server:
        page = chromium_browser.new_page(viewport={"width": 1400, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        try:
            page.goto(server.url + link, wait_until="load")
            page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length === 1")
            headers = page.locator("#points thead th").all_inner_texts()
            cells = page.locator("#points").evaluate(TABLE_ROWS)
            _check_points(cells, headers, ours, official, stat, "run page")
            # The baseline the PR named, kept with the run: the page compares with it too.
            assert f"vs {BASELINE} (named in the PR)" in page.inner_text("ul.baselines")
            traces = page.evaluate(
                "document.getElementById('chart-0').data.map(t => [t.name, t.y])"
            )
            page.screenshot(path=str(tmp_path / "run-page.png"), full_page=True)
        finally:
            page.close()
    assert errors == []
    names = [name for name, _ in traces]
    assert f"baseline {BASELINE}" in names and any(name.startswith("PR #40 @") for name in names)
