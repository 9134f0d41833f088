"""Leaderboard: Pareto fronts, tier values, cost, rankings, history and the static site."""

from inferx_pipeline import pandas_options as _pandas_options  # noqa: F401  before any frame
