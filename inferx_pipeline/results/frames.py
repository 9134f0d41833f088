"""DataFrame -> rows for the results table: native values, or the bulk writers' bind form.

The bind form (``sqlite_bulk.record_values`` for one record) is what SQLite binds fastest
and what PostgreSQL's COPY reads as CSV: NULL as NaN, booleans as 0/1, datetimes as naive
UTC text. ``bind_rows`` builds it a column at a time with vectorised pandas/NumPy steps and
hands out the rows lazily, so a bulk write never holds a tuple per row.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any, overload

import numpy as np
import pandas as pd
from sqlalchemy import Boolean, DateTime, Integer

from inferx_pipeline.errors import StoreError
from inferx_pipeline.results.record import RECORD_COLUMNS
from inferx_pipeline.results.sqlite_bulk import NULL
from inferx_pipeline.results.tables import RESULTS

Row = tuple[Any, ...]

# Offset of the date/time separator in numpy's ISO text ("2026-01-01T00:00:00.000000").
_ISO_T = 10


class ColumnRows(Sequence[Row]):
    """Rows over per-column lists: iteration zips the columns, so each row's tuple is made
    on demand (and reused by ``zip`` when the consumer drops it, as ``executemany`` does)."""

    def __init__(self, columns: list[list[Any]]) -> None:
        self.columns = columns

    def __len__(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    @overload
    def __getitem__(self, index: int) -> Row: ...

    @overload
    def __getitem__(self, index: slice) -> ColumnRows: ...

    def __getitem__(self, index: int | slice) -> Row | ColumnRows:
        if isinstance(index, slice):
            return ColumnRows([column[index] for column in self.columns])
        return tuple(column[index] for column in self.columns)

    def __iter__(self) -> Iterator[Row]:
        return zip(*self.columns, strict=True)


def _check_columns(frame: pd.DataFrame) -> None:
    if set(frame.columns) != set(RECORD_COLUMNS):
        missing = sorted(set(RECORD_COLUMNS) - set(frame.columns))
        extra = sorted(set(frame.columns) - set(RECORD_COLUMNS))
        raise StoreError(f"write_frame: columns differ: missing {missing}, unexpected {extra}")


def bind_rows(frame: pd.DataFrame) -> ColumnRows:
    """Rows in ``RECORD_COLUMNS`` order in the bind form (see the module docstring); every
    null (NaN/NaT/None/pd.NA) becomes NaN. Raises ``StoreError`` on wrong columns."""
    _check_columns(frame)
    return ColumnRows([_bind_column(frame[name], RESULTS.c[name].type) for name in RECORD_COLUMNS])


def _bind_column(series: pd.Series, sql_type: Any) -> list[Any]:
    if isinstance(sql_type, DateTime):
        return _datetime_text(series)
    kind = series.dtype.kind
    if kind == "b" and isinstance(series.dtype, np.dtype):
        flags: list[Any] = series.to_numpy(np.int64).tolist()
        return flags
    if kind in "iu" and isinstance(series.dtype, np.dtype):
        ints: list[Any] = series.tolist()
        return ints
    if kind == "f" and isinstance(series.dtype, np.dtype):
        if not isinstance(sql_type, Integer):
            floats: list[Any] = series.tolist()  # NaN stays NaN
            return floats
        # "1024.0" is no integer to PostgreSQL's COPY: whole numbers as int, NaN for NULL.
        series = series.astype("Int64")
    values = series.to_numpy(object)
    if isinstance(series.dtype, pd.StringDtype) and series.dtype.na_value is np.nan:
        strings: list[Any] = values.tolist()  # its nulls are NaN already: no scan
        return strings
    missing = pd.isna(values)
    if missing.any():
        values = values.copy()
        values[missing] = NULL
    out: list[Any] = values.tolist()
    if isinstance(sql_type, Boolean):
        return [int(v) if v is True or v is False else v for v in out]
    return out


def _datetime_text(series: pd.Series) -> list[Any]:
    """UTC text as SQLAlchemy's SQLite DateTime writes it ("2026-01-01 00:00:00.000000")."""
    stamps = pd.to_datetime(series, utc=True)  # a no-op for a tz-aware datetime column
    naive = stamps.dt.tz_localize(None).to_numpy("datetime64[us]")
    text = np.datetime_as_string(naive, unit="us")
    if len(text):
        # The fixed-width UCS-4 array lets the "T" become " " in one vectorised assignment.
        text.view(np.uint32).reshape(len(text), -1)[:, _ISO_T] = ord(" ")
    values = text.astype(object)
    values[np.isnat(naive)] = NULL
    out: list[Any] = values.tolist()
    return out


def to_tuples(frame: pd.DataFrame) -> list[Row]:
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
