"""DataFrame -> rows for the results table: native values, or the SQLite driver's fastest form."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import DateTime

from inferx_pipeline.errors import StoreError
from inferx_pipeline.results.record import RECORD_COLUMNS
from inferx_pipeline.results.sqlite_bulk import NULL
from inferx_pipeline.results.tables import RESULTS

DATETIMES: tuple[str, ...] = tuple(
    name for name in RECORD_COLUMNS if isinstance(RESULTS.c[name].type, DateTime)
)


def _check_columns(frame: pd.DataFrame) -> None:
    if set(frame.columns) != set(RECORD_COLUMNS):
        missing = sorted(set(RECORD_COLUMNS) - set(frame.columns))
        extra = sorted(set(frame.columns) - set(RECORD_COLUMNS))
        raise StoreError(f"write_frame: columns differ: missing {missing}, unexpected {extra}")


def sqlite_rows(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    """Rows in ``RECORD_COLUMNS`` order as SQLite binds them fastest: bools as 0/1, UTC
    datetimes as SQLAlchemy's text, every null (NaN/NaT/None/NA) as NaN, which SQLite
    stores as NULL. Converted a column at a time. Raises ``StoreError`` on wrong columns.
    """
    _check_columns(frame)
    columns = [_sqlite_column(frame[name]) for name in RECORD_COLUMNS]
    return list(zip(*columns, strict=True))


def _sqlite_column(series: pd.Series) -> list[Any]:
    if pd.api.types.is_datetime64_any_dtype(series):
        utc = series.dt.tz_convert("UTC") if series.dt.tz is not None else series
        naive = utc.dt.tz_localize(None).to_numpy("datetime64[us]")
        text = pd.Series(np.datetime_as_string(naive, unit="us")).str.replace("T", " ")
        stamps: list[Any] = text.where(series.notna().to_numpy(), NULL).tolist()
        return stamps
    if pd.api.types.is_bool_dtype(series) and not series.hasnans:
        flags: list[Any] = series.to_numpy(np.int64).tolist()
        return flags
    if pd.api.types.is_float_dtype(series) and series.dtype.kind == "f":
        floats: list[Any] = series.tolist()  # NaN stays NaN
        return floats
    values: list[Any] = series.tolist()
    if series.dtype == object or series.hasnans:
        return [_sqlite_value(v) for v in values]
    return values


def _sqlite_value(value: Any) -> Any:
    if _missing(value):
        return NULL
    return int(value) if value is True or value is False else value


def to_tuples(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    """Rows in ``RECORD_COLUMNS`` order: native Python values, None for NaN/NaT/NA.

    Raises ``StoreError`` when the columns are not exactly ``RECORD_COLUMNS``.
    """
    _check_columns(frame)
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
