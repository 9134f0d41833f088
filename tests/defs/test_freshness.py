"""Freshness policies on the results assets, their windows read from catalog/freshness.yaml."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import dagster as dg
import pytest
import yaml

from inferx_pipeline.defs.freshness import FRESHNESS_FILE, load_freshness
from inferx_pipeline.errors import CatalogError
from tests.defs.conftest import Project


def _rewrite(path: Path, data: object) -> None:
    """Replace the test root's link to the checkout's file with a file of its own."""
    path.unlink()
    path.write_text(yaml.safe_dump(data))


def _policies(defs: dg.Definitions) -> dict[str, object]:
    graph = defs.resolve_asset_graph()
    return {
        key.to_user_string(): graph.get(key).freshness_policy
        for key in graph.get_all_asset_keys()
        if graph.get(key).freshness_policy is not None
    }


def test_the_results_assets_carry_the_catalogs_windows(project: Project) -> None:
    path = project.settings.catalog_dir / FRESHNESS_FILE
    data = yaml.safe_load(path.read_text())
    data["windows"]["leaderboard"] = {"warn_hours": 3, "fail_hours": 7.5}
    _rewrite(path, data)
    policies = _policies(project.definitions())
    assert sorted(policies) == ["leaderboard", "normalized_results"]
    board = policies["leaderboard"]
    assert isinstance(board, dg.FreshnessPolicy)
    windows = (board.warn_window.to_timedelta(), board.fail_window.to_timedelta())
    assert windows == (timedelta(hours=3), timedelta(hours=7.5))


def test_a_bad_window_or_an_unknown_asset_names_the_file(project: Project) -> None:
    path = project.settings.catalog_dir / FRESHNESS_FILE
    data = yaml.safe_load(path.read_text())
    data["windows"]["leaderboard"] = {"warn_hours": 50, "fail_hours": 26}
    _rewrite(path, data)
    with pytest.raises(CatalogError) as raised:
        load_freshness(project.settings.catalog_dir)
    message = str(raised.value)
    assert message.startswith(f"{path}: invalid freshness windows:")
    assert "windows.leaderboard" in message and "must be below fail_hours 26" in message
    data["windows"] = {"leaderbord": {"warn_hours": 1, "fail_hours": 2}}
    _rewrite(path, data)
    with pytest.raises(CatalogError) as unknown:
        project.definitions()
    assert str(unknown.value).startswith(f"{path}: windows.leaderbord: no such asset; expected")
