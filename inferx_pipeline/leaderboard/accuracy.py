"""The accuracy view: per model and task, each configuration's newest eval score.

A configuration is one eval point: SKU, engine, precision, speculative decoding, TP and
the concurrency it was scored at, on one image digest. Each row carries the judged
exact match (the lowest over the task's filters) with its standard error, the threshold
and whether it passed, how many throughput rows of its configuration the gate marks
(``results.gate``: its synthetic-acceptance points too), and the provenance a reader
needs (documents scored, dataset, simulated or real, harness and engine versions).
``as_of`` is the newest score's date.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import pandas as pd
from pydantic import Field

from inferx_pipeline.results.gate import digest_key, scored_configs
from inferx_pipeline.strict import FrozenModel

# Where a configuration's newest score wins over an older one.
_POINT = ["fingerprint", "conc", "image_digest"]


class AccuracyRow(FrozenModel):
    """One configuration's score."""

    label: str = Field(description="GPU · engine · precision · spec · TP · conc.")
    sku: str
    framework: str
    precision: str
    spec_method: str
    score: float = Field(description="Judged exact match (lowest filter).")
    stderr: float
    threshold: float
    passed: bool
    marked_rows: int = Field(description="Throughput rows of its configuration the gate marks.")
    n: int = Field(description="Documents scored.")
    dataset: str
    simulated: bool
    lm_eval_version: str
    engine_version: str | None
    finished_at: datetime


class AccuracyGroup(FrozenModel):
    """Every configuration of one model on one task."""

    model: str
    task: str
    as_of: datetime
    rows: tuple[AccuracyRow, ...]


def _label(row: pd.Series) -> str:
    spec = "no spec" if row["spec_method"] == "none" else f"spec {row['spec_method']}"
    parts = (row["sku"], row["framework"], row["precision"], spec)
    return " · ".join(str(p) for p in parts) + f" · TP{row['tp']} · conc {row['conc']}"


def accuracy_groups(evals: pd.DataFrame, marked: pd.DataFrame) -> list[AccuracyGroup]:
    """Groups by (model, task), configurations by score (best first) (pure).

    ``evals`` has ``EvalRecord`` columns; ``marked`` the throughput rows after
    ``gate.mark_rows`` (``fingerprint``, ``image_digest``, ``config_id``, ``eval_below``).
    """
    known = marked[["fingerprint", "config_id"]].astype(str).drop_duplicates("fingerprint")
    evals = evals.assign(
        config_id=scored_configs(evals, dict(known.itertuples(index=False, name=None))),
        _digest=digest_key(evals["image_digest"]),
    )
    points = evals.sort_values("finished_at", kind="stable").drop_duplicates(_POINT, keep="last")
    below = marked[marked["eval_below"]]
    counts = below.groupby(["config_id", digest_key(below["image_digest"])]).size()
    groups = []
    for (model, task), mine in points.groupby(["model", "task"], sort=True):
        rows = [
            AccuracyRow(
                label=_label(row),
                sku=str(row["sku"]),
                framework=str(row["framework"]),
                precision=str(row["precision"]),
                spec_method=str(row["spec_method"]),
                score=row["exact_match"],
                stderr=row["exact_match_stderr"],
                threshold=row["threshold"],
                passed=bool(row["passed"]),
                marked_rows=int(counts.get((row["config_id"], row["_digest"]), 0)),
                n=row["n_effective"],
                dataset=row["dataset"],
                simulated=bool(row["simulated"]),
                lm_eval_version=row["lm_eval_version"],
                # An imported score has none; beside a known one pandas holds it as NaN.
                engine_version=None if pd.isna(row["engine_version"]) else row["engine_version"],
                finished_at=row["finished_at"],
            )
            for _, row in mine.sort_values("exact_match", ascending=False).iterrows()
        ]
        as_of = max(row.finished_at for row in rows)
        groups.append(
            AccuracyGroup(model=str(model), task=str(task), as_of=as_of, rows=tuple(rows))
        )
    return groups


# What a leaderboard table row and a score share: the model and its serving configuration.
RowKey = tuple[str, ...]


def row_scores(groups: Sequence[AccuracyGroup]) -> dict[RowKey, tuple[float, bool]]:
    """(model, SKU, framework, precision, spec method) -> (lowest newest score, whether
    any configuration of it is below its threshold): the score shown beside table rows."""
    found: dict[RowKey, tuple[float, bool]] = {}
    for group in groups:
        for row in group.rows:
            key = (group.model, row.sku, row.framework, row.precision, row.spec_method)
            score, below = found.get(key, (row.score, False))
            found[key] = (min(score, row.score), below or not row.passed)
    return found
