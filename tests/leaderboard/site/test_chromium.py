"""The built site in headless Chromium: charts render, filters filter, downloads download."""

from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import Any

import pytest

from inferx_pipeline.leaderboard.build import SiteManifest
from inferx_pipeline.leaderboard.serve import SiteServer

pytestmark = pytest.mark.chromium


def _open(browser: Any, url: str) -> tuple[Any, list[str]]:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url, wait_until="load")
    return page, errors


def test_model_page_renders_plotly_traces(
    chromium_browser: Any, built_site: tuple[Path, SiteManifest], tmp_path: Path
) -> None:
    out, manifest = built_site
    model_page = next(p for p in manifest.pages if p.kind == "model")
    with SiteServer(out) as server:
        page, errors = _open(chromium_browser, server.url + model_page.path)
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length === 4")
        names = page.evaluate(
            "Array.from(document.querySelectorAll('.js-plotly-plot'))"
            ".map(d => d.data.map(t => t.name))"
        )
        assert len(names) == 4
        assert all("non-optimal points" in chart for chart in names)
        assert any(" · " in name for name in names[0]), names[0]
        page.select_option("#stat", "p99")
        page.wait_for_function("window.location.hash.includes('stat=p99')")
        x_title = page.evaluate(
            "document.getElementById('chart-throughput').layout.xaxis.title.text"
        )
        assert "p99" in x_title
        # The X-axis choice: E2E-normalized interactivity, labelled with its units.
        page.select_option("#axis", "e2e")
        page.wait_for_function("window.location.hash.includes('axis=e2e')")
        x_title = page.evaluate(
            "document.getElementById('chart-throughput').layout.xaxis.title.text"
        )
        assert x_title.startswith("E2E-normalized interactivity, p99 (tok/s/user"), x_title
        e2e_x = page.evaluate("document.getElementById('chart-throughput').data[0].x")
        assert e2e_x and all(x > 0 for x in e2e_x)
        shot = tmp_path / "model-page.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"screenshot: {shot}")
        assert shot.stat().st_size > 10_000
        assert errors == []
        page.close()


def test_table_filter_permalink_and_csv(
    chromium_browser: Any, built_site: tuple[Path, SiteManifest], tmp_path: Path
) -> None:
    out, manifest = built_site
    with SiteServer(out) as server:
        page, errors = _open(chromium_browser, server.url + "table.html")
        visible = "document.querySelectorAll('#results tbody tr:not([hidden])').length"
        total = page.evaluate(visible)
        assert total == manifest.counts["tier_values"]
        sku = page.evaluate("document.querySelector('select[data-key=sku]').options[1].value")
        page.select_option("select[data-key=sku]", sku)
        filtered = page.evaluate(visible)
        assert 0 < filtered < total
        skus = page.evaluate(
            "Array.from(document.querySelectorAll('#results tbody tr:not([hidden])'))"
            ".map(r => r.dataset.sku)"
        )
        assert set(skus) == {sku}
        assert f"sku={sku}" in page.url
        # The permalink reproduces the filtered view in a fresh page.
        again, again_errors = _open(chromium_browser, page.url)
        assert again.evaluate(visible) == filtered
        href = page.get_attribute("#download-csv", "href")
        assert href is not None
        with urllib.request.urlopen(server.url + href, timeout=10) as response:
            body = response.read().decode()
        assert body.startswith("# inferx-pipeline leaderboard.")
        assert "\nmodel,workload,sku," in body
        shot = tmp_path / "table-filtered.png"
        page.screenshot(path=str(shot))
        print(f"screenshot: {shot}")
        assert errors == [] and again_errors == []
        page.close()
        again.close()


def test_overview_and_history_pages_load(
    chromium_browser: Any, built_site: tuple[Path, SiteManifest]
) -> None:
    out, manifest = built_site
    history = next(p for p in manifest.pages if p.kind == "history")
    with SiteServer(out) as server:
        page, errors = _open(chromium_browser, server.url + "index.html")
        assert page.locator("section.ranking").count() > 0
        page.goto(server.url + history.path, wait_until="load")
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length === 1")
        traces = page.evaluate("document.getElementById('chart-history').data.length")
        assert traces > 0
        assert errors == []
        page.close()
