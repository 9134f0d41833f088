"""What the overview says of each group at its workload's headline tier, reached or not.

A group whose front misses the headline tier has no tier value to rank, yet a reader must
still see it: its row carries the interactivity range its front does span, and
``reach_note`` words it ("not reached (front spans 12-38 tok/s/user)").
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from inferx_pipeline.leaderboard.frame import GROUP_KEYS


def front_spans(front: pd.DataFrame, x: str) -> pd.DataFrame:
    """Per group (``GROUP_KEYS``): ``front_lo`` and ``front_hi``, the least and most
    interactive front point's ``x`` (tok/s/user)."""
    spans = front.groupby(list(GROUP_KEYS), observed=True)[x].agg(["min", "max"])
    return spans.rename(columns={"min": "front_lo", "max": "front_hi"}).reset_index()


def headline_values(
    tiers: pd.DataFrame, front: pd.DataFrame, x: str, headline_of: Callable[[str], float]
) -> pd.DataFrame:
    """Each group's tier row at its scenario's headline tier (``headline_of``), every
    status kept, with its front's span (``front_spans``) and a ``note`` (``reach_note``).

    ``tiers`` is ``Leaderboard.tiers`` (with its ``scenario`` column); ``front`` the front
    rows the tiers were read off, ``x`` their interactivity column.
    """
    headline = tiers["scenario"].astype(str).map(headline_of).astype(float)
    at = tiers.loc[tiers["tier"].astype(float) == headline]
    keys = list(GROUP_KEYS)
    # Categorical keys from two frames may hold different categories: join on strings.
    spans = front_spans(front, x).astype(dict.fromkeys(keys, str))
    merged = at.astype(dict.fromkeys(keys, str)).merge(spans, on=keys, how="left")
    notes = [
        reach_note(status, lo, hi)
        for status, lo, hi in zip(
            merged["status"], merged["front_lo"], merged["front_hi"], strict=True
        )
    ]
    return merged.assign(note=notes).sort_values(keys).reset_index(drop=True)


def reach_note(status: str, lo: float, hi: float) -> str:
    """``""`` for a reached tier; else why not, with the front's span in tok/s/user:
    ``not reached`` (the tier is above the front) or ``below range`` (the sweep never
    loaded the server down to the tier)."""
    if status == "ok":
        return ""
    words = {"not_reached": "not reached", "below_range": "below range"}[status]
    if np.isnan(lo) or np.isnan(hi):
        return words
    return f"{words} (front spans {_rate(lo)}-{_rate(hi)} tok/s/user)"


def _rate(value: float) -> str:
    # Whole tok/s/user above 10, as a reader compares them; one decimal below.
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}"
