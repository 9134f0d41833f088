"""Set-based reads of the results table into typed pandas columns, chunk by chunk.

The DBAPI cursor is read directly (no SQLAlchemy row or type processing) and each chunk
of rows is turned column-wise into numpy/pandas arrays at once, so a million rows never
exist as a million Python tuples: memory is bounded by ``CHUNK_ROWS`` rows of Python
objects plus the typed columns. Strings can come back as ``category`` (one code per row),
which is what makes a million-row leaderboard fit in memory and group quickly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals
from sqlalchemy import Boolean, Connection, DateTime, Float, Integer, Select

from inferx_pipeline.results.tables import RESULTS

# Rows turned into columns per step: bounds the Python objects alive at once.
CHUNK_ROWS = 50_000

Kind = Literal["bool", "int", "nullable_int", "float", "datetime", "str"]
_DATETIME = "datetime64[us, UTC]"


def column_kind(name: str) -> Kind:
    """How a results column is typed in a frame (from its SQLAlchemy type and nullability)."""
    column = RESULTS.c[name]
    if isinstance(column.type, Boolean):
        return "bool"
    if isinstance(column.type, Integer):
        return "nullable_int" if column.nullable else "int"
    if isinstance(column.type, Float):
        return "float"
    if isinstance(column.type, DateTime):
        return "datetime"
    return "str"


def _str_chunk(values: tuple[Any, ...], categorical: bool) -> Any:
    if categorical:
        return pd.Categorical(values)
    return np.array(values, dtype=object)


# kind -> one chunk of driver values -> a typed array (strings handled by _str_chunk)
_CHUNK: dict[Kind, Callable[[tuple[Any, ...]], Any]] = {
    # SQLite hands back 0/1, PostgreSQL bools: numpy reads both.
    "bool": lambda values: np.array(values, dtype=bool),
    "int": lambda values: np.array(values, dtype=np.int64),
    "nullable_int": lambda values: pd.array(values, dtype="Int64"),
    # None becomes NaN.
    "float": lambda values: np.array(values, dtype=np.float64),
    # SQLite stores UTC as naive ISO text, PostgreSQL returns aware datetimes.
    "datetime": lambda values: pd.to_datetime(list(values), utc=True, format="ISO8601"),
}


def _combine(kind: Kind, parts: list[Any], categorical: bool) -> Any:
    if kind == "str" and categorical:
        # Chunks saw different strings: recode them onto one sorted set of categories.
        return union_categoricals(parts, sort_categories=True)
    if kind == "str":
        return pd.array(np.concatenate(parts), dtype="str")
    if kind in ("datetime", "nullable_int"):
        joined = pd.concat([pd.Series(part) for part in parts], ignore_index=True)
        return joined.astype(_DATETIME) if kind == "datetime" else joined.array
    return np.concatenate(parts)


def _empty(kind: Kind, categorical: bool) -> Any:
    if kind == "str":
        return pd.Categorical([]) if categorical else pd.array([], dtype="str")
    dtypes = {"bool": "bool", "int": "int64", "nullable_int": "Int64", "float": "float64"}
    return pd.array([], dtype=dtypes.get(kind, _DATETIME))


def read_columns(
    conn: Connection, stmt: Select[Any], names: Sequence[str], *, categorical: bool = False
) -> pd.DataFrame:
    """Run ``stmt`` (selecting the results columns ``names``, in order) into a DataFrame.

    Dtypes do not depend on the backend: bool, int64, Int64 (nullable integers), float64,
    datetime64[us, UTC], and ``str`` or, with ``categorical``, ``category`` with sorted
    categories. Raises the driver's error wrapped by SQLAlchemy on a failing query.
    """
    kinds = [column_kind(name) for name in names]
    compiled = stmt.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
    params = compiled.params
    # The driver's own parameter style: a tuple for SQLite's ?, a dict for psycopg2.
    args: Any = params
    if compiled.positional:
        args = tuple(params[key] for key in compiled.positiontup or ())
    cursor = conn.connection.cursor()
    parts: list[list[Any]] = [[] for _ in names]
    try:
        cursor.execute(str(compiled), args)
        while rows := cursor.fetchmany(CHUNK_ROWS):
            for index, values in enumerate(zip(*rows, strict=True)):
                kind = kinds[index]
                chunk = _str_chunk(values, categorical) if kind == "str" else _CHUNK[kind](values)
                parts[index].append(chunk)
            del rows
    finally:
        cursor.close()
    data = {
        name: _combine(kind, chunks, categorical) if chunks else _empty(kind, categorical)
        for name, kind, chunks in zip(names, kinds, parts, strict=True)
    }
    return pd.DataFrame(data, columns=list(names))
