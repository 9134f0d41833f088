"""Regression episodes on a synthetic image series: open, stay open, close, reopen at the end."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pytest

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.leaderboard.config import LeaderboardConfig, RegressionPolicy
from inferx_pipeline.leaderboard.frame import prepare
from inferx_pipeline.leaderboard.regressions import (
    alerts_document,
    episodes,
    judge,
    judged_points,
)
from inferx_pipeline.leaderboard.synthetic import frame_from_rows, synthetic_frame

T0 = datetime(2026, 3, 1, tzinfo=UTC)
SERIES = [100.0, 101.0, 99.0, 100.0, 102.0, 80.0, 82.0, 100.0, 99.0, 70.0]


def _history(values: list[float]):  # type: ignore[no-untyped-def]  # a test helper
    rows = [
        {"image_tag": f"v{i}", "image": f"vllm/vllm-openai:v{i}", "tput_per_gpu": v,
         "started_at": T0 + timedelta(days=i), "finished_at": T0 + timedelta(days=i, hours=1),
         "result_id": f"{i:064x}", "artifact_sha256": f"{i:064x}"}
        for i, v in enumerate(values)
    ]  # fmt: skip
    return prepare(frame_from_rows(rows))


def test_episode_opens_closes_and_reopens(config: LeaderboardConfig) -> None:
    found = episodes(judged_points(_history(SERIES), config.regression))
    tput = found.loc[found["metric"] == "tput_per_gpu"]
    assert len(found) == len(tput) == 2  # the constant metrics never alert
    first, last = tput.iloc[0], tput.iloc[1]
    # Baseline 100, MAD 1 -> band max(3 x 1.4826, 5 % of 100) = 5: 80 and 82 are outside.
    assert (first["opened_image"], first["closed_image"], first["images"]) == ("v5", "v7", 2)
    assert first["baseline"] == pytest.approx(100.0)
    assert first["delta_pct"] == pytest.approx(-20.0)
    assert not first["open"]
    # The regressed values stayed out of the band, so 70 is judged against ~100 too.
    assert (last["opened_image"], last["open"]) == ("v9", True)
    assert last["closed_image"] is None


def test_values_before_min_history_are_not_judged(config: LeaderboardConfig) -> None:
    found = episodes(judged_points(_history([100.0, 50.0, 100.0, 100.0, 100.0]), config.regression))
    assert found.empty


def test_lower_is_better_metrics_alert_upwards() -> None:
    policy = RegressionPolicy(
        k=3.0, window=4, min_history=3, min_rel_spread=0.0, metrics={"ttft_median_s": "lower"}
    )
    values = np.array([[1.0, 1.1, 0.9, 1.0, 2.0, 0.5]])
    verdict = judge(values, policy, "lower")
    # 2.0 is far above the band; 0.5 is better than the band: not a regression.
    assert verdict["outside"].tolist() == [[False, False, False, False, True, False]]
    # Window of 4: the band at position 5 uses 1.1, 0.9, 1.0 and ... not 2.0 (rejected).
    assert verdict["median"][0, 5] == pytest.approx(1.0)


def test_alerts_document_lists_open_and_closed(config: LeaderboardConfig) -> None:
    found = episodes(judged_points(_history(SERIES), config.regression))
    doc = alerts_document(found, config.regression, T0)
    assert [e["opened_image"] for e in doc["open"]] == ["v9"]
    assert [e["closed_image"] for e in doc["closed"]] == ["v7"]
    assert doc["policy"]["k"] == config.regression.k
    assert doc["open"][0]["opened_at"].startswith("2026-03-10")


def test_no_rows_judge_to_no_points_and_no_episodes(config: LeaderboardConfig) -> None:
    empty = _history([100.0]).iloc[0:0]
    points = judged_points(empty, config.regression)
    assert points.empty
    assert episodes(points).empty


def test_flagged_only_keeps_what_the_episodes_read(
    catalog: Catalog, config: LeaderboardConfig
) -> None:
    # Many keys over 12 images, some thrown off their band in one image.
    rows = synthetic_frame(catalog, 4000, images=12, seed=5)
    drop = rows["image_tag"].eq("v007") & (rows.index % 7 == 0)
    rows.loc[drop, "tput_per_gpu"] *= 0.5
    prepared = prepare(rows)
    every = judged_points(prepared, config.regression)
    flagged = judged_points(prepared, config.regression, flagged_only=True)
    assert 0 < len(flagged) < len(every) / 4
    assert list(flagged.columns) == list(every.columns)
    found = episodes(every)
    assert len(found) > 0
    pd.testing.assert_frame_equal(episodes(flagged), found)
