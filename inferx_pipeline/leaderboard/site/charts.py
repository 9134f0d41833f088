"""Plotly trace and layout dicts for the model and history pages (plain JSON, no figures).

Each front point's hover names its recipe, image, concurrency and config; a point that is
not an official real-GPU run is drawn open and its hover carries the badge.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pandas as pd

from inferx_pipeline.leaderboard.config import Axis, Stat
from inferx_pipeline.leaderboard.cost import cost_column
from inferx_pipeline.leaderboard.pareto import THROUGHPUT, interactivity_column, pareto_mask
from inferx_pipeline.leaderboard.site.exports import json_column

Trace = dict[str, Any]
NON_OPTIMAL = "non-optimal points"
_HOVER = (
    "%{customdata[0]}<br>image %{customdata[1]} · conc %{customdata[2]}<br>"
    "%{customdata[3]}<br>%{customdata[4]}<extra>%{fullData.name}</extra>"
)
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


def _points(points: pd.DataFrame, x: str, y: str) -> dict[str, list[Any]]:
    """Column-wise point data of a trace (one conversion per column, not per point)."""
    badge = points["badge"].astype(str).replace("", "official").to_numpy()
    custom = zip(
        points["recipe_id"].astype(str), points["image_tag"].astype(str),
        points["conc"].astype(int).tolist(), points["config"].astype(str), badge, strict=True,
    )  # fmt: skip
    symbols = np.where(points["official"].astype(bool), "circle", "circle-open")
    return {
        "x": json_column(points[x].astype(float)),
        "y": json_column(points[y].astype(float)),
        "customdata": [list(c) for c in custom],
        "symbol": symbols.tolist(),
    }


def _trace(name: str, mode: str, data: dict[str, list[Any]], lo: int, hi: int) -> Trace:
    return {
        "type": "scatter", "mode": mode, "name": name, "x": data["x"][lo:hi],
        "y": data["y"][lo:hi], "customdata": data["customdata"][lo:hi],
        "hovertemplate": _HOVER, "marker": {"symbol": data["symbol"][lo:hi], "size": 7},
    }  # fmt: skip


def front_traces(front: pd.DataFrame, stat: Stat, chart: str) -> list[Trace]:
    """One line per group (``label``) through its front points, sorted along the x axis."""
    x, y = _axes(stat, chart)
    ordered = front.sort_values(["label", x])
    labels = ordered["label"].astype(str).to_numpy()
    data = _points(ordered, x, y)
    cuts = [0, *(np.flatnonzero(labels[1:] != labels[:-1]) + 1).tolist(), len(labels)]
    return [
        _trace(str(labels[lo]), "lines+markers", data, lo, hi)
        for lo, hi in itertools.pairwise(cuts)
        if hi > lo
    ]


def scatter_trace(others: pd.DataFrame, stat: Stat, chart: str) -> Trace:
    """The non-front points as one trace, hidden until the reader asks ("hide non-optimal")."""
    x, y = _axes(stat, chart)
    trace = _trace(NON_OPTIMAL, "markers", _points(others, x, y), 0, len(others))
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


def model_page_charts(
    fronts: dict[Axis, dict[Stat, pd.DataFrame]],
    others: dict[Axis, dict[Stat, pd.DataFrame]],
    price_tiers: tuple[str, ...],
) -> dict[str, dict[str, dict[str, Any]]]:
    """``{stat: {chart: {"data": traces, "layout": layout}}}`` for every percentile stat.

    Charts: ``throughput``, ``ttft``, ``e2el`` and ``cost@<price tier>`` for each tier,
    from the interactivity fronts; ``e2e-throughput`` and ``e2e-cost@<price tier>`` from the
    E2E-normalized ones. ``fronts`` and ``others`` (the non-front points) are per axis and
    stat; rows need a ``label`` column (``group_label``) and the cost columns.
    """
    costs = [f"cost@{tier}" for tier in price_tiers]
    per_axis: dict[Axis, list[str]] = {
        "intvty": [*_CHARTS, *costs],
        "e2e_intvty": [E2E_PREFIX + chart for chart in ("throughput", *costs)],
    }
    charts: dict[str, dict[str, dict[str, Any]]] = {}
    for axis, names in per_axis.items():
        for stat, front in fronts[axis].items():
            per_stat = charts.setdefault(stat, {})
            for chart in names:
                traces = front_traces(front, stat, chart)
                if not others[axis][stat].empty:
                    traces.append(scatter_trace(others[axis][stat], stat, chart))
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
    traces = []
    for (workload, tier), points in series.groupby(["workload", "tier"], observed=True):
        ordered = points.sort_values("image_rank")
        traces.append({
            "type": "scatter", "mode": "lines+markers", "name": f"{workload} @ {tier:g} tok/s/user",
            "x": ordered["image_rank"].astype(int).tolist(),
            "y": json_column(ordered[THROUGHPUT].astype(float)),
            "hovertemplate": "%{y:.4g} tok/s/GPU<extra>%{fullData.name}</extra>",
        })  # fmt: skip
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
