"""Leaderboard: Pareto fronts, tier values, cost, rankings, history and the static site."""
