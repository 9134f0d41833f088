"""DataFrame <-> row dicts for the results table, with one dtype per column on every backend."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd
from sqlalchemy import Boolean, DateTime, Float, Integer

from inferx_pipeline.errors import StoreError
from inferx_pipeline.results.record import RECORD_COLUMNS
from inferx_pipeline.results.tables import RESULTS


def _dtype(name: str) -> str | None:
    column = RESULTS.c[name]
    if isinstance(column.type, Boolean):
        return "bool"
    if isinstance(column.type, Integer):
        return "Int64" if column.nullable else "int64"
    if isinstance(column.type, Float):
        return "float64"
    return None


# column -> pandas dtype; datetimes and strings are handled by name below.
DTYPES: dict[str, str] = {
    name: dtype for name in RECORD_COLUMNS if (dtype := _dtype(name)) is not None
}
DATETIMES: tuple[str, ...] = tuple(
    name for name in RECORD_COLUMNS if isinstance(RESULTS.c[name].type, DateTime)
)


def with_dtypes(frame: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    """``frame`` with backend differences removed (SQLite 0/1 bools, naive datetimes)."""
    casts = {name: DTYPES[name] for name in names if name in DTYPES}
    frame = frame.astype(casts)
    for name in names:
        if name in DATETIMES:
            # SQLite hands back naive datetimes that were written as UTC.
            frame[name] = pd.to_datetime(frame[name], utc=True)
    return frame


def to_tuples(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    """Rows in ``RECORD_COLUMNS`` order: native Python values, None for NaN/NaT/NA.

    Raises ``StoreError`` when the columns are not exactly ``RECORD_COLUMNS``.
    """
    if set(frame.columns) != set(RECORD_COLUMNS):
        missing = sorted(set(RECORD_COLUMNS) - set(frame.columns))
        extra = sorted(set(frame.columns) - set(RECORD_COLUMNS))
        raise StoreError(f"write_frame: columns differ: missing {missing}, unexpected {extra}")
    # Column-wise tolist() yields native values far faster than row-wise conversion.
    columns = [_native(frame[name]) for name in RECORD_COLUMNS]
    return list(zip(*columns, strict=True))


def _native(series: pd.Series) -> list[Any]:
    if pd.api.types.is_datetime64_any_dtype(series):
        aware = (
            series.dt.tz_convert("UTC")
            if series.dt.tz is not None
            else series.dt.tz_localize("UTC")
        )
        stamps: list[Any] = aware.dt.to_pydatetime().tolist()
        return [None if v is pd.NaT else v for v in stamps] if series.hasnans else stamps
    values: list[Any] = series.tolist()
    if not series.hasnans:
        return values
    return [None if _missing(v) else v for v in values]


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))
