"""Plotly trace and layout dicts for the model and history pages (plain JSON, no figures).

Each front point's hover names its recipe, image, concurrency and config; a point that is
not an official real-GPU run is drawn open and its hover carries the badge.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pandas as pd

from inferx_pipeline.leaderboard.config import STATS, Axis, Stat
from inferx_pipeline.leaderboard.cost import cost_column
from inferx_pipeline.leaderboard.pareto import THROUGHPUT, interactivity_column, pareto_mask
from inferx_pipeline.leaderboard.site.exports import json_column

Trace = dict[str, Any]
NON_OPTIMAL = "non-optimal points"
_HOVER = (
    "%{customdata[0]}<br>image %{customdata[1]} · conc %{customdata[2]}<br>"
    "%{customdata[3]}<br>%{customdata[4]}<extra>%{fullData.name}</extra>"
)
# What a point's hover, marker and line read besides its axes (``_Rows``).
_HOVER_COLUMNS: tuple[str, ...] = (
    "recipe_id", "image_tag", "conc", "config", "badge", "official", "label",
)  # fmt: skip
# chart key -> (x axis title, y axis title, chart title)
_CHARTS: dict[str, tuple[str, str, str]] = {
    "throughput": ("tok/s/user", "tok/s/GPU", "Throughput per GPU vs interactivity"),
    "ttft": ("tok/s/GPU", "TTFT (s)", "Time to first token vs throughput"),
    "e2el": ("tok/s/GPU", "E2E latency (s)", "End-to-end latency vs throughput"),
}


# Charts drawn against E2E-normalized interactivity carry this prefix (``e2e-throughput``).
E2E_PREFIX = "e2e-"
# Interactivity axis -> its title at a statistic, units included.
_AXIS_TITLES: dict[Axis, str] = {
    "intvty": "interactivity, {stat} (tok/s/user)",
    "e2e_intvty": (
        "E2E-normalized interactivity, {stat} (tok/s/user: 1 / {stat} E2EL per output token)"
    ),
}


def _axis(chart: str) -> tuple[Axis, str]:
    """The interactivity axis of ``chart`` and its name without the axis prefix."""
    if chart.startswith(E2E_PREFIX):
        return "e2e_intvty", chart.removeprefix(E2E_PREFIX)
    return "intvty", chart


def _axes(stat: Stat, chart: str) -> tuple[str, str]:
    axis, chart = _axis(chart)
    x = interactivity_column(stat, axis)
    if chart.startswith("cost@"):
        return x, cost_column("total", chart.removeprefix("cost@"))
    return {
        "throughput": (x, THROUGHPUT),
        "ttft": (THROUGHPUT, f"ttft_{stat}_s"),
        "e2el": (THROUGHPUT, f"e2el_{stat}_s"),
    }[chart]


class _Points:
    """Per-point data of a page's rows, each column converted once however many charts and
    frames draw them (a model page draws its fronts and other points in up to a dozen
    charts per axis and statistic, every one a subset of the page's rows)."""

    def __init__(self, points: pd.DataFrame) -> None:
        self.points = points
        badge = points["badge"].astype(str).replace("", "official").tolist()
        custom = zip(
            points["recipe_id"].astype(str).tolist(), points["image_tag"].astype(str).tolist(),
            points["conc"].astype(int).tolist(), points["config"].astype(str).tolist(), badge,
            strict=True,
        )  # fmt: skip
        self.custom = _objects([list(c) for c in custom])
        self.symbols = np.where(points["official"].astype(bool), "circle", "circle-open")
        self._values: dict[str, np.ndarray] = {}
        self._floats: dict[str, np.ndarray] = {}
        self._labels: tuple[np.ndarray, np.ndarray] | None = None

    def labels(self) -> tuple[np.ndarray, np.ndarray]:
        """The ``label`` of each row (a front's group) as strings, and its code in their
        sorted order: (label, x) order without comparing strings per frame. Only a front
        has labels."""
        if self._labels is None:
            labels = self.points["label"].astype(str).to_numpy(dtype=object)
            self._labels = labels, np.unique(labels, return_inverse=True)[1].reshape(-1)
        return self._labels

    def values(self, column: str) -> np.ndarray:
        """``column`` as JSON-ready floats (None for NaN), in row order."""
        if column not in self._values:
            self._values[column] = _objects(json_column(self.points[column].astype(float)))
        return self._values[column]

    def floats(self, column: str) -> np.ndarray:
        """``column`` as float64, in row order (for sorting)."""
        if column not in self._floats:
            self._floats[column] = self.points[column].to_numpy(dtype=float)
        return self._floats[column]


def _objects(values: list[Any]) -> np.ndarray:
    # An object array of exactly these values (np.array would nest the customdata lists).
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


class _Rows:
    """The rows of one frame's traces: positions into the page's ``_Points`` (``page``, or
    the frame's own when it has none), whose rows must include the frame's by index
    label."""

    def __init__(self, points: pd.DataFrame, page: _Points | None = None) -> None:
        self.points = points
        self.page, self.at = page or _Points(points), np.arange(len(points))
        if page is not None:
            self.at = page.points.index.get_indexer(points.index)
            if (self.at < 0).any():  # not the page's rows after all: convert its own
                self.page, self.at = _Points(points), np.arange(len(points))

    def order(self, x: str) -> np.ndarray:
        """Row positions in (``label``, ``x``) order: the order of a front's line points
        (stable: ties keep row order, as a pandas sort of both columns would)."""
        return np.lexsort((self.page.floats(x)[self.at], self.page.labels()[1][self.at]))

    def labels(self) -> np.ndarray:
        """The ``label`` of each row (a front's group), as strings."""
        labels: np.ndarray = self.page.labels()[0][self.at]
        return labels

    def data(self, x: str, y: str, order: np.ndarray) -> dict[str, list[Any]]:
        """Column-wise trace data of the rows at positions ``order``."""
        at = self.at[order]
        return {
            "x": self.page.values(x)[at].tolist(), "y": self.page.values(y)[at].tolist(),
            "customdata": self.page.custom[at].tolist(), "symbol": self.page.symbols[at].tolist(),
        }  # fmt: skip


def _points(points: pd.DataFrame, x: str, y: str) -> dict[str, list[Any]]:
    """Column-wise point data of a trace (one conversion per column, not per point)."""
    return _Rows(points).data(x, y, np.arange(len(points)))


def _trace(name: str, mode: str, data: dict[str, list[Any]], lo: int, hi: int) -> Trace:
    return {
        "type": "scatter", "mode": mode, "name": name, "x": data["x"][lo:hi],
        "y": data["y"][lo:hi], "customdata": data["customdata"][lo:hi],
        "hovertemplate": _HOVER, "marker": {"symbol": data["symbol"][lo:hi], "size": 7},
    }  # fmt: skip


def front_traces(front: pd.DataFrame, stat: Stat, chart: str) -> list[Trace]:
    """One line per group (``label``) through its front points, sorted along the x axis."""
    return _front_traces(_Rows(front), stat, chart)


def _front_traces(rows: _Rows, stat: Stat, chart: str) -> list[Trace]:
    x, y = _axes(stat, chart)
    order = rows.order(x)
    labels = rows.labels()[order]
    data = rows.data(x, y, order)
    cuts = [0, *(np.flatnonzero(labels[1:] != labels[:-1]) + 1).tolist(), len(labels)]
    return [
        _trace(str(labels[lo]), "lines+markers", data, lo, hi)
        for lo, hi in itertools.pairwise(cuts)
        if hi > lo
    ]


def scatter_trace(others: pd.DataFrame, stat: Stat, chart: str) -> Trace:
    """The non-front points as one trace, hidden until the reader asks ("hide non-optimal")."""
    return _scatter_trace(_Rows(others), stat, chart)


def _scatter_trace(rows: _Rows, stat: Stat, chart: str) -> Trace:
    x, y = _axes(stat, chart)
    count = len(rows.points)
    trace = _trace(NON_OPTIMAL, "markers", rows.data(x, y, np.arange(count)), 0, count)
    trace["visible"] = "legendonly"
    trace["marker"] |= {"color": "rgba(120,120,120,0.5)", "size": 5}
    return trace


def layout(chart: str, stat: Stat) -> dict[str, Any]:
    """Title and axis titles of a model-page chart (``throughput``, ``ttft``, ``e2el``,
    ``cost@<price tier>``; the first and last also ``e2e-`` prefixed: against E2E-normalized
    interactivity)."""
    axis, chart = _axis(chart)
    interactivity = _AXIS_TITLES[axis].format(stat=stat)
    if chart.startswith("cost@"):
        tier = chart.removeprefix("cost@")
        x_title, y_title, title = interactivity, "$ per M total tokens", f"Cost ({tier} prices)"
    else:
        x_title, y_title, title = _CHARTS[chart]
        x_title = interactivity if x_title == "tok/s/user" else x_title
    if axis == "e2e_intvty":
        title += " (E2E-normalized)"
    return {
        "title": {"text": title},
        "xaxis": {"title": {"text": x_title}},
        "yaxis": {"title": {"text": y_title}},
        "hovermode": "closest",
        "legend": {"orientation": "h", "y": -0.25},
        "margin": {"t": 50, "r": 20},
    }


def _model_charts(price_tiers: tuple[str, ...]) -> dict[Axis, list[str]]:
    """The charts of a model page per interactivity axis."""
    costs = [f"cost@{tier}" for tier in price_tiers]
    return {
        "intvty": [*_CHARTS, *costs],
        "e2e_intvty": [E2E_PREFIX + chart for chart in ("throughput", *costs)],
    }


def model_chart_columns(price_tiers: tuple[str, ...]) -> list[str]:
    """Every column ``model_page_charts`` reads of its points (axes, hover, marker, group)."""
    axes = [
        column
        for names in _model_charts(price_tiers).values()
        for stat in STATS
        for chart in names
        for column in _axes(stat, chart)
    ]
    return list(dict.fromkeys([*axes, *_HOVER_COLUMNS]))


def model_page_charts(
    fronts: dict[Axis, dict[Stat, pd.DataFrame]],
    others: dict[Axis, dict[Stat, pd.DataFrame]],
    price_tiers: tuple[str, ...],
    points: pd.DataFrame | None = None,
) -> dict[str, dict[str, dict[str, Any]]]:
    """``{stat: {chart: {"data": traces, "layout": layout}}}`` for every percentile stat.

    Charts: ``throughput``, ``ttft``, ``e2el`` and ``cost@<price tier>`` for each tier,
    from the interactivity fronts; ``e2e-throughput`` and ``e2e-cost@<price tier>`` from the
    E2E-normalized ones. ``fronts`` and ``others`` (the non-front points) are per axis and
    stat; rows need a ``label`` column (``group_label``) and the cost columns. ``points``,
    when given, holds (by index label) every row of ``fronts`` and ``others`` (a model
    page's rows): each of its columns is then converted once for all of them.
    """
    charts: dict[str, dict[str, dict[str, Any]]] = {}
    page = _Points(points) if points is not None else None
    for axis, names in _model_charts(price_tiers).items():
        for stat, front in fronts[axis].items():
            per_stat = charts.setdefault(stat, {})
            front_rows, other_rows = _Rows(front, page), _Rows(others[axis][stat], page)
            for chart in names:
                traces = _front_traces(front_rows, stat, chart)
                if not other_rows.points.empty:
                    traces.append(_scatter_trace(other_rows, stat, chart))
                per_stat[chart] = {"data": traces, "layout": layout(chart, stat)}
    return charts


def comparison_chart(
    sides: list[tuple[str, pd.DataFrame]], stat: Stat, title: str
) -> dict[str, Any]:
    """Throughput per GPU against interactivity at ``stat`` of several sets of points
    (``(name, points)``: an unofficial run's and its baseline's, one workload): each set's
    Pareto front as a line named ``name``, its other points as markers beside it.

    Points need the columns ``_points`` reads (``recipe_id``, ``image_tag``, ``conc``,
    ``config``, ``badge``, ``official``); a point without interactivity is not drawn.
    """
    x = interactivity_column(stat)
    traces: list[Trace] = []
    for name, points in sides:
        drawable = points.loc[points[x].notna()]
        if drawable.empty:
            continue
        on_front = pareto_mask(drawable, x, THROUGHPUT, ("workload",))
        traces += front_traces(drawable.loc[on_front].assign(label=name), stat, "throughput")
        rest = drawable.loc[~on_front]
        if not rest.empty:
            other = _trace(f"{name}: other points", "markers", _points(rest, x, THROUGHPUT), 0,
                           len(rest))  # fmt: skip
            other["marker"] |= {"size": 5}
            traces.append(other)
    return {"data": traces, "layout": layout("throughput", stat) | {"title": {"text": title}}}


def history_chart(
    series: pd.DataFrame, images: list[str], marked: list[tuple[int, int]]
) -> dict[str, Any]:
    """Tier value over image tags (x = image position), one line per workload x tier.

    ``marked`` holds [first, last] image positions of regression episodes, drawn as shaded
    bands so a reader sees where the recipe regressed.
    """
    # One sort and one conversion per column; then each line is a slice.
    ordered = series.sort_values(["workload", "tier", "image_rank"], kind="stable")
    workloads = ordered["workload"].astype(str).to_numpy()
    tiers = ordered["tier"].to_numpy(float)
    starts = np.ones(len(ordered), dtype=bool)
    starts[1:] = (workloads[1:] != workloads[:-1]) | (tiers[1:] != tiers[:-1])
    cuts = [*np.flatnonzero(starts).tolist(), len(ordered)]
    ranks = ordered["image_rank"].astype(int).tolist()
    values = json_column(ordered[THROUGHPUT].astype(float))
    traces = [
        {
            "type": "scatter", "mode": "lines+markers",
            "name": f"{workloads[lo]} @ {tiers[lo]:g} tok/s/user",
            "x": ranks[lo:hi], "y": values[lo:hi],
            "hovertemplate": "%{y:.4g} tok/s/GPU<extra>%{fullData.name}</extra>",
        }
        for lo, hi in itertools.pairwise(cuts)
    ]  # fmt: skip
    shapes = [
        {"type": "rect", "xref": "x", "yref": "paper", "x0": lo - 0.5, "x1": hi + 0.5,
         "y0": 0, "y1": 1, "fillcolor": "rgba(220,50,50,0.15)", "line": {"width": 0}}
        for lo, hi in marked
    ]  # fmt: skip
    return {
        "data": traces,
        "layout": {
            "title": {"text": "Throughput per GPU at each tier, by image"},
            "xaxis": {"title": {"text": "image tag"}, "tickmode": "array",
                      "tickvals": list(range(len(images))), "ticktext": images},
            "yaxis": {"title": {"text": "tok/s/GPU"}},
            "shapes": shapes, "legend": {"orientation": "h", "y": -0.3},
        },
    }  # fmt: skip
