"""``inferx leaderboard build|serve`` through click's runner, and the loopback server."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pandas as pd
from click.testing import CliRunner

from inferx_pipeline.cli import cli
from inferx_pipeline.leaderboard.build import SiteManifest
from inferx_pipeline.leaderboard.serve import SiteServer
from inferx_pipeline.results.store import ResultStore


def test_build_from_a_sqlite_store(tmp_path: Path, sweep: pd.DataFrame) -> None:
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    store = ResultStore(url)
    try:
        store.write_frame(sweep.iloc[:600])
    finally:
        store.close()
    result = CliRunner().invoke(
        cli, ["leaderboard", "build", "--db", url, "--out", str(tmp_path / "s")]
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("wrote ") and "600 rows" in result.output
    assert (tmp_path / "s" / "table.html").is_file()


def test_serve_without_a_site_is_one_error_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["leaderboard", "serve", "--dir", str(tmp_path)])
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == (
        f"Error: {tmp_path}: no index.html; build the site first with `inferx leaderboard build`"
    )


def test_server_listens_on_loopback_only(built_site: tuple[Path, SiteManifest]) -> None:
    out, _ = built_site
    with SiteServer(out) as server:
        assert server.url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(server.url + "alerts.json", timeout=10) as response:
            assert response.status == 200
            assert b'"policy"' in response.read()
