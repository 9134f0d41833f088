"""The accuracy gate: each throughput row marked with the eval of its configuration.

A configuration whose eval scored below its threshold stays on the leaderboard: every
throughput row of the same configuration (``configs.config_id``, which leaves out what
only an eval server changes: real verification instead of synthetic acceptance, the
eval context length) on the same image digest carries the score, the threshold and
``eval_below`` = True; so a synthetic-acceptance throughput point is judged by its
real-verification eval twin. Rows without a score carry nulls and ``eval_below`` =
False. The newest score of a configuration wins (a re-run supersedes an older one).

Scores stored before configuration ids existed (migration 0004, ``config_id`` null)
judge the rows whose fingerprint is their ``server_fingerprint``, as they did then.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from inferx_pipeline.results.configs import frame_config_ids

# Columns ``mark_rows`` adds to the throughput rows: each row's configuration id, then
# the newest score of that configuration.
MARK_COLUMNS = (
    "config_id", "eval_task", "eval_score", "eval_stderr", "eval_threshold", "eval_below",
)  # fmt: skip
# Join keys as plain objects: the rows may hold them as categoricals.
_KEY = ["config_id", "_digest"]


def digest_key(digests: pd.Series) -> pd.Series:
    """Image digests as join keys: plain strings, "" for an unknown digest (imports)."""
    return digests.astype(object).where(digests.notna(), "")


def scored_configs(evals: pd.DataFrame, by_fingerprint: Mapping[str, str]) -> pd.Series:
    """The configuration each score judges: its ``config_id``; for a score stored without
    one, the configuration of its server fingerprint in ``by_fingerprint`` (fingerprint
    -> config id of the throughput rows), else the fingerprint itself (pure)."""
    legacy = evals["server_fingerprint"].astype(str).astype(object)
    found = evals["config_id"].astype(object)
    return found.where(found.notna(), legacy.map(lambda fp: by_fingerprint.get(fp, fp)))


def newest_scores(
    evals: pd.DataFrame, by_fingerprint: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """The newest eval row per (configuration, image digest), ``config_id`` resolved by
    ``scored_configs``."""
    resolved = evals.assign(config_id=scored_configs(evals, by_fingerprint or {}))
    ordered = resolved.sort_values("finished_at", kind="stable")
    keys = ordered.assign(_digest=digest_key(ordered["image_digest"]))
    return ordered[~keys.duplicated(_KEY, keep="last")]


def mark_rows(rows: pd.DataFrame, evals: pd.DataFrame) -> pd.DataFrame:
    """``rows`` (ResultRecord columns: at least ``fingerprint``, ``image_digest`` and the
    ``configs.CONFIG_FIELDS``) with ``MARK_COLUMNS`` from ``evals`` (EvalRecord columns);
    the same rows in the same order, none dropped (pure)."""
    configs = frame_config_ids(rows)
    known = pd.DataFrame({"fp": rows["fingerprint"].astype(str), "config": configs})
    by_fingerprint = dict(known.drop_duplicates("fp").itertuples(index=False, name=None))
    scores = newest_scores(evals, by_fingerprint)
    marks = pd.DataFrame(
        {
            "config_id": scores["config_id"],
            "_digest": digest_key(scores["image_digest"]),
            "eval_task": scores["task"],
            "eval_score": scores["exact_match"].astype(float),
            "eval_stderr": scores["exact_match_stderr"].astype(float),
            "eval_threshold": scores["threshold"].astype(float),
            "eval_below": ~scores["passed"].astype(bool),
        }
    )
    left = rows.assign(config_id=configs, _digest=digest_key(rows["image_digest"]))
    marked = left.merge(marks, on=_KEY, how="left", validate="many_to_one").drop(columns="_digest")
    marked["eval_below"] = marked["eval_below"].eq(True)
    marked.index = rows.index
    return marked


def below_threshold(evals: pd.DataFrame) -> pd.DataFrame:
    """The newest score of each configuration that is below its threshold (pure)."""
    scores = newest_scores(evals)
    return scores[~scores["passed"].astype(bool)]
