"""Leaderboard from the results store: the two-query read gives the same board as the frame."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.leaderboard.board import compute_leaderboard
from inferx_pipeline.leaderboard.config import LeaderboardConfig
from inferx_pipeline.leaderboard.source import read_board_frames
from inferx_pipeline.results.store import ResultStore


def _sorted(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    plain = frame.astype({c: "str" for c in frame.columns if frame[c].dtype == "category"})
    return plain.sort_values(keys).reset_index(drop=True)


def test_store_read_matches_the_in_memory_board(
    tmp_path: Path, sweep: pd.DataFrame, catalog: Catalog, config: LeaderboardConfig
) -> None:
    failed = sweep.iloc[:5].assign(status="failed", artifact_sha256=lambda f: f["result_id"] + "")
    frame = pd.concat([sweep.iloc[5:], failed], ignore_index=True)
    store = ResultStore(f"sqlite:///{tmp_path / 'r.sqlite'}")
    try:
        store.write_frame(frame)
        history, latest = read_board_frames(store, config)
    finally:
        store.close()
    assert isinstance(history["recipe_id"].dtype, pd.CategoricalDtype)
    want = compute_leaderboard(frame, catalog, config)
    got = compute_leaderboard(history, catalog, config, latest)
    assert len(got.rows) == len(want.rows) == len(sweep) - 5
    assert set(latest["image_tag"]) == set(want.current["image_tag"])
    keys = ["model", "workload", "label", "tier"]
    cols = [*keys, "tput_per_gpu", "status"]
    pd.testing.assert_frame_equal(_sorted(got.tiers[cols], keys), _sorted(want.tiers[cols], keys))
    history_keys = ["recipe_id", "workload", "tier", "image_rank"]
    pd.testing.assert_frame_equal(
        _sorted(got.history, history_keys), _sorted(want.history, history_keys), check_dtype=False
    )
    assert len(got.episodes) == len(want.episodes) > 0
