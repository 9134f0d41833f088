"""The accuracy gate: each throughput row marked with the eval of its server identity.

A configuration whose eval scored below its threshold stays on the leaderboard: every
throughput row of the same server identity (``fingerprint`` = the score's
``server_fingerprint``, on the same image digest) carries the score, the threshold and
``eval_below`` = True. Rows without a score carry nulls and ``eval_below`` = False. The
newest score of an identity wins (a re-run supersedes an older one).
"""

from __future__ import annotations

import pandas as pd

# Columns ``mark_rows`` adds to the throughput rows.
MARK_COLUMNS = ("eval_task", "eval_score", "eval_stderr", "eval_threshold", "eval_below")
# Join keys as plain objects: the rows may hold them as categoricals.
_KEY = ["_fingerprint", "_digest"]


def newest_scores(evals: pd.DataFrame) -> pd.DataFrame:
    """The newest eval row per (server identity, image digest)."""
    ordered = evals.sort_values("finished_at", kind="stable")
    return ordered.drop_duplicates(["server_fingerprint", "image_digest"], keep="last")


def mark_rows(rows: pd.DataFrame, evals: pd.DataFrame) -> pd.DataFrame:
    """``rows`` (ResultRecord columns) with ``MARK_COLUMNS`` from ``evals`` (EvalRecord
    columns); the same rows in the same order, none dropped (pure)."""
    scores = newest_scores(evals)
    marks = pd.DataFrame(
        {
            "_fingerprint": scores["server_fingerprint"].astype(str),
            "_digest": scores["image_digest"].astype(object),
            "eval_task": scores["task"],
            "eval_score": scores["exact_match"].astype(float),
            "eval_stderr": scores["exact_match_stderr"].astype(float),
            "eval_threshold": scores["threshold"].astype(float),
            "eval_below": ~scores["passed"].astype(bool),
        }
    )
    left = rows.assign(
        _fingerprint=rows["fingerprint"].astype(str),
        _digest=rows["image_digest"].astype(object),
    )
    marked = left.merge(marks, on=_KEY, how="left", validate="many_to_one").drop(columns=_KEY)
    marked["eval_below"] = marked["eval_below"].eq(True)
    marked.index = rows.index
    return marked


def below_threshold(evals: pd.DataFrame) -> pd.DataFrame:
    """The newest score of each server identity that is below its threshold (pure)."""
    scores = newest_scores(evals)
    return scores[~scores["passed"].astype(bool)]
