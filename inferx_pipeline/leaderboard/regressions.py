"""Noise-aware regression detection over image history, with episodes and an alerts document.

A key is (recipe, SKU, workload, config, concurrency, metric). Each image's value is judged
against a band from the key's own recent history: median +/- max(k x 1.4826 x MAD,
min_rel_spread x |median|) over the last ``window`` accepted values, once at least
``min_history`` exist. A value on the worse side opens an episode (values inside an episode
are kept out of the band, so a lasting regression is not absorbed as the new normal); the
first later image back inside the band closes it. Vectorized across keys, stepping through
image positions (at most the number of images).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd

from inferx_pipeline.leaderboard.config import Direction, RegressionPolicy
from inferx_pipeline.leaderboard.history import image_order

SERIES_KEYS: tuple[str, ...] = ("recipe_id", "sku", "workload", "config", "conc")
_MAD_TO_SIGMA = 1.4826  # MAD of a normal distribution x this = its standard deviation


def _row_median(buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # Median ignoring NaN without numpy's all-NaN warnings: NaN sorts last.
    count = np.sum(~np.isnan(buf), axis=1)
    ordered = np.sort(buf, axis=1)
    rows = np.arange(len(buf))
    lo = ordered[rows, np.maximum(count - 1, 0) // 2]
    hi = ordered[rows, np.maximum(count, 1) // 2 - (count == 0)]
    return np.where(count > 0, (lo + hi) / 2.0, np.nan), count


def judge(values: np.ndarray, policy: RegressionPolicy, direction: Direction) -> dict[str, Any]:
    """Judge a [series x image position] matrix (NaN = no value at that position).

    Returns matrices ``median``, ``band`` and ``outside`` (True where a judged value lies
    on the worse side of its band). Pure and deterministic.
    """
    n_series, n_pos = values.shape
    buf = np.full((n_series, policy.window), np.nan)
    accepted = np.zeros(n_series, dtype=int)
    median = np.full(values.shape, np.nan)
    band = np.full(values.shape, np.nan)
    outside = np.zeros(values.shape, dtype=bool)
    rows = np.arange(n_series)
    for t in range(n_pos):
        value = values[:, t]
        med, count = _row_median(buf)
        mad, _ = _row_median(np.abs(buf - med[:, None]))
        half = np.maximum(policy.k * _MAD_TO_SIGMA * mad, policy.min_rel_spread * np.abs(med))
        worse = value < med - half if direction == "higher" else value > med + half
        present = ~np.isnan(value)
        out = present & (count >= policy.min_history) & worse
        median[:, t], band[:, t], outside[:, t] = med, half, out
        accept = present & ~out
        buf[rows[accept], accepted[accept] % policy.window] = value[accept]
        accepted += accept
    return {"median": median, "band": band, "outside": outside}


def judged_points(
    rows: pd.DataFrame, policy: RegressionPolicy, *, flagged_only: bool = False
) -> pd.DataFrame:
    """Every (key, image) value of every policy metric with its band and ``outside`` flag.

    ``rows`` is a prepared frame over all images. One value per key and image (the newest
    attempt). Columns: the series keys, ``metric``, ``image_tag``, ``image_time``,
    ``image_rank``, ``value``, ``median``, ``band``, ``outside``. ``flagged_only`` keeps
    only the points of (key, metric) series with a value outside the band: all that
    ``episodes`` reads, a small share of the millions of points a large history has.
    """
    keys = list(SERIES_KEYS)
    metrics = list(policy.metrics)
    # Only the columns judged or kept: every copy below is then a fraction of ``rows``.
    wanted = list(dict.fromkeys([*keys, "image_tag", "finished_at", "attempt", *metrics]))
    latest = (
        rows[wanted]
        .sort_values(["finished_at", "attempt"])
        .drop_duplicates([*keys, "image_tag"], keep="last")
    )
    base = latest.merge(image_order(rows), on=["recipe_id", "image_tag"])
    base["series"] = base.groupby(keys, observed=True, sort=False).ngroup()
    base = base.sort_values(["series", "image_rank"]).reset_index(drop=True)
    base["position"] = base.groupby("series").cumcount()
    # An empty frame (no valid rows yet) has NaN maxima: it yields empty verdicts.
    shape = (
        (int(base["series"].max()) + 1, int(base["position"].max()) + 1) if len(base) else (0, 0)
    )
    if not metrics:
        return base.iloc[0:0]
    series, position = base["series"].to_numpy(), base["position"].to_numpy()
    every = np.arange(len(base))
    taken: list[np.ndarray] = []  # per metric: the rows of ``base`` it keeps
    verdicts: dict[str, list[np.ndarray]] = {"value": [], "median": [], "band": [], "outside": []}
    for metric, direction in policy.metrics.items():
        values = base[metric].to_numpy(float)
        matrix = np.full(shape, np.nan)
        matrix[series, position] = values
        grids = judge(matrix, policy, direction)
        take = np.flatnonzero(grids["outside"].any(axis=1)[series]) if flagged_only else every
        taken.append(take)
        verdicts["value"].append(values[take])
        for name, grid in grids.items():
            verdicts[name].append(grid[series[take], position[take]])
    # One row per key, image and metric, metric by metric: one take of the key columns
    # rather than a copy per metric and a concatenation of the copies.
    kept = base[[*keys, "series", "image_tag", "image_time", "image_rank"]]
    points = kept.iloc[np.concatenate(taken)].reset_index(drop=True)
    # Categorical (sorted, so it orders as the names do): millions of rows, a few names.
    names = sorted(metrics)
    codes = np.repeat([names.index(metric) for metric in metrics], [len(t) for t in taken])
    points["metric"] = pd.Categorical.from_codes(codes, categories=names)
    for name in list(verdicts):  # each verdict's parts freed once joined, not all at the end
        points[name] = np.concatenate(verdicts.pop(name))
    return points


def episodes(points: pd.DataFrame) -> pd.DataFrame:
    """Runs of consecutive outside values per key and metric, oldest first.

    Columns: the series keys, ``metric``, ``opened_image``, ``opened_at``, ``images``
    (count inside), ``baseline`` (band median when opened), ``worst``, ``delta_pct`` (worst vs
    baseline, percent), ``closed_image`` / ``closed_at`` (None while ``open``), ``open``.
    """
    pts = points.loc[points["value"].notna() & _flagged(points)]
    pts = pts.sort_values(["metric", "series", "image_rank"]).reset_index(drop=True)
    same = (pts["metric"] == pts["metric"].shift()) & (pts["series"] == pts["series"].shift())
    starts = pts["outside"] & ~(same & pts["outside"].shift(fill_value=False))
    pts["run"] = starts.cumsum()
    inside = pts.loc[pts["outside"]]
    grouped = inside.groupby("run")
    first = grouped.head(1)
    out = first[[*SERIES_KEYS, "metric"]].reset_index(drop=True)
    out["opened_image"] = first["image_tag"].to_numpy()
    out["opened_at"] = first["image_time"].to_numpy()
    out["images"] = grouped.size().to_numpy()
    out["baseline"] = first["median"].to_numpy()
    lower = first["value"].to_numpy() < first["median"].to_numpy()
    out["worst"] = np.where(lower, grouped["value"].min(), grouped["value"].max())
    out["delta_pct"] = (out["worst"] / out["baseline"] - 1.0) * 100.0
    # The row right after a run's last row closes it when it belongs to the same key.
    after = grouped.tail(1).index.to_numpy() + 1
    closes = np.zeros(len(after), dtype=bool)
    in_range = after < len(pts)
    closes[in_range] = same.to_numpy()[after[in_range]]
    closer = np.where(closes, after, 0)
    tags = pts["image_tag"].astype(object).iloc[closer].to_numpy()
    out["closed_image"] = pd.Series(np.where(closes, tags, None), dtype=object)
    out["closed_at"] = pts["image_time"].iloc[closer].where(closes).to_numpy()
    out["open"] = ~closes
    return out.sort_values(["opened_at", *SERIES_KEYS]).reset_index(drop=True)


def _flagged(points: pd.DataFrame) -> np.ndarray:
    """True for the points of (metric, series) keys with a value outside the band: only
    those can open or close an episode, so the others need not be sorted."""
    metric = pd.factorize(points["metric"])[0]
    series = points["series"].to_numpy()
    key = series * (int(metric.max(initial=0)) + 1) + metric
    outside = points["outside"].to_numpy(bool)
    flagged = np.zeros(int(key.max(initial=0)) + 1, dtype=bool)
    flagged[key[outside]] = True
    mask: np.ndarray = flagged[key]
    return mask


def alerts_document(
    found: pd.DataFrame, policy: RegressionPolicy, generated_at: datetime
) -> dict[str, Any]:
    """The alerts JSON: policy, and open and closed episodes (JSON-ready values only)."""
    records = []
    for row in found.to_dict("records"):
        records.append({k: _plain(v) for k, v in row.items()})
    return {
        "generated_at": generated_at.isoformat(),
        "policy": policy.model_dump(mode="json"),
        "open": [r for r in records if r["open"]],
        "closed": [r for r in records if not r["open"]],
    }


def _plain(value: object) -> object:
    if isinstance(value, pd.Timestamp | datetime):
        return value.isoformat()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and np.isnan(value):
        return None
    if value is pd.NaT or value is None:
        return None
    return value
