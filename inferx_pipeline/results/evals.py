"""Stored eval scores: ``EvalRecord`` rows (``results.eval_record``) written once, by
``artifact_sha256``, and read back.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd
from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

from inferx_pipeline.errors import StoreError
from inferx_pipeline.results.eval_record import EvalRecord
from inferx_pipeline.results.store import IngestReport, ResultStore
from inferx_pipeline.results.tables import EVALS


def write_evals(store: ResultStore, records: Iterable[EvalRecord]) -> IngestReport:
    """Store ``records`` in one transaction; an artifact already stored is skipped.

    StoreError (nothing kept) when the database fails.
    """
    rows = [record.model_dump() for record in records]
    try:
        with store.engine.begin() as conn:
            have = set(conn.scalars(select(EVALS.c.artifact_sha256)))
            fresh = {
                row["artifact_sha256"]: row for row in rows if row["artifact_sha256"] not in have
            }
            if fresh:
                conn.execute(EVALS.insert(), list(fresh.values()))
    except SQLAlchemyError as err:
        raise StoreError(f"eval_results: cannot write: {err}") from err
    return IngestReport(written=len(fresh), skipped_existing=len(rows) - len(fresh))


def read_evals(store: ResultStore) -> pd.DataFrame:
    """Every stored eval row (columns of ``EvalRecord``), oldest first."""
    try:
        with store.engine.connect() as conn:
            found = conn.execute(select(EVALS).order_by(EVALS.c.finished_at)).mappings().all()
    except SQLAlchemyError as err:
        raise StoreError(f"eval_results: cannot read: {err}") from err
    return pd.DataFrame([dict(row) for row in found], columns=list(EvalRecord.model_fields))
