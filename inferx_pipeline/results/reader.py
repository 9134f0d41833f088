"""Set-based reads of the results table into typed pandas columns, chunk by chunk.

The DBAPI cursor is read directly (no SQLAlchemy row or type processing) and each chunk
of rows becomes one numpy structured array (a loop in C, not a transpose and a conversion
per column in Python), so a million rows never exist as a million Python tuples: memory
is bounded by ``CHUNK_ROWS`` rows of Python objects plus the typed columns. Strings can
come back as ``category``: factorized per chunk, their codes merged onto one sorted set of
categories at the end (one code per row), which is what makes a million-row leaderboard
fit in memory and group quickly. SQLite's page cache is kept small for the scan
(``_small_page_cache``).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal

import numpy as np
import pandas as pd
from sqlalchemy import Boolean, Connection, DateTime, Float, Integer, Select

from inferx_pipeline.results.tables import RESULTS

# Rows turned into columns per step: bounds the Python objects alive at once.
CHUNK_ROWS = 50_000

Kind = Literal["bool", "int", "nullable_int", "float", "datetime", "str"]
_DATETIME = "datetime64[us, UTC]"
# How each kind sits in the structured array: nullable and text values stay objects.
_FIELD: dict[Kind, str] = {
    "bool": "?", "int": "i8", "float": "f8", "nullable_int": "O", "datetime": "O", "str": "O",
}  # fmt: skip
_SQLITE_DEFAULT_CACHE = -2000  # KiB: SQLite's own default page cache
# SQLite's implicit row id: a key for reading rows again by lookup rather than by scan.
ROWID = "rowid"


def column_kind(name: str) -> Kind:
    """How a results column is typed in a frame (from its SQLAlchemy type and nullability);
    ``ROWID`` (SQLite's row id, selected by name) is an int."""
    if name == ROWID:
        return "int"
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


def read_columns(
    conn: Connection, stmt: Select[Any], names: Sequence[str], *, categorical: bool = False
) -> pd.DataFrame:
    """Run ``stmt`` (selecting the results columns ``names``, in order) into a DataFrame.

    Dtypes do not depend on the backend: bool, int64, Int64 (nullable integers), float64,
    datetime64[us, UTC], and ``str`` or, with ``categorical``, ``category`` with sorted
    categories. A failing query raises SQLAlchemy's error or, for errors met while the
    driver's cursor runs or fetches, the DBAPI driver's own (unwrapped).
    """
    kinds = [column_kind(name) for name in names]
    parts = _fetch(conn, stmt, kinds, categorical)
    data = {}
    for index, (name, kind) in enumerate(zip(names, kinds, strict=True)):
        data[name] = _combine(kind, parts[index], categorical)
        parts[index] = []  # each column's chunks go as soon as it is whole: a lower peak
    return pd.DataFrame(data, columns=list(names))


def _fetch(
    conn: Connection, stmt: Select[Any], kinds: list[Kind], categorical: bool
) -> list[list[Any]]:
    """Per column, its converted chunks (at least one, maybe empty)."""
    compiled = stmt.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
    params = compiled.params
    # The driver's own parameter style: a tuple for SQLite's ?, a dict for psycopg2.
    args: Any = params
    if compiled.positional:
        args = tuple(params[key] for key in compiled.positiontup or ())
    dtype = np.dtype([(f"c{i}", _FIELD[kind]) for i, kind in enumerate(kinds)])
    parts: list[list[Any]] = [[] for _ in kinds]
    with _small_page_cache(conn):
        cursor = conn.connection.cursor()
        try:
            cursor.execute(str(compiled), args)
            # An empty result still makes one (empty) chunk: it carries the dtypes.
            while (rows := cursor.fetchmany(CHUNK_ROWS)) or not parts[0]:
                table = np.array(rows, dtype=dtype)
                for index, kind in enumerate(kinds):
                    parts[index].append(_convert(kind, table[f"c{index}"], categorical))
                del rows, table
        finally:
            cursor.close()
    return parts


@contextmanager
def _small_page_cache(conn: Connection) -> Iterator[None]:
    """SQLite's default page cache for the duration of a read, then the store's again.

    The store sizes the cache for index inserts (hundreds of MiB); a scan of the table
    gains nothing from it, and filling it costs about a quarter of the read's time and as
    much memory as the frame read.
    """
    if conn.dialect.name != "sqlite":
        yield
        return
    (previous,) = conn.exec_driver_sql("PRAGMA cache_size").one()
    conn.exec_driver_sql(f"PRAGMA cache_size={_SQLITE_DEFAULT_CACHE}")
    try:
        yield
    finally:
        conn.exec_driver_sql(f"PRAGMA cache_size={int(previous)}")


def _convert(kind: Kind, values: np.ndarray, categorical: bool) -> Any:
    if kind == "str" and categorical:
        return pd.factorize(values)  # (codes, uniques); None has code -1
    if kind == "nullable_int":
        return _nullable_ints(values)
    if kind == "datetime":
        return _datetimes(values)
    return values.copy()  # a contiguous copy, not a view of the whole structured array


def _nullable_ints(values: np.ndarray) -> pd.arrays.IntegerArray:
    """Python ints and Nones as ``Int64``: one vectorized mask and cast, where
    ``pd.array(values, dtype="Int64")`` inspects every object (four times slower)."""
    missing = pd.isna(values)
    return pd.arrays.IntegerArray(np.where(missing, 0, values).astype(np.int64), missing)


def _datetimes(values: np.ndarray) -> pd.Series:
    """Stored times as ``datetime64[us, UTC]``.

    SQLite stores UTC as naive ISO text, which numpy parses in C at twice pandas' speed; a
    value numpy would not take as it is (an offset, PostgreSQL's aware datetimes) sends the
    chunk through pandas, which converts offsets to UTC.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy only warns on an offset it would drop
        try:
            naive = values.astype("datetime64[us]")
        except (ValueError, TypeError, Warning):
            return pd.Series(pd.to_datetime(values, utc=True, format="ISO8601")).astype(_DATETIME)
    return pd.Series(naive).dt.tz_localize("UTC")


def _combine(kind: Kind, parts: list[Any], categorical: bool) -> Any:
    if kind == "str" and categorical:
        return _categorical(parts)
    if kind == "str":
        return pd.array(np.concatenate(parts), dtype="str")
    if kind == "datetime":
        return pd.concat(parts, ignore_index=True).array
    if kind == "nullable_int":
        return pd.concat([pd.Series(part) for part in parts], ignore_index=True).array
    return np.concatenate(parts)


def concat_categoricals(columns: Sequence[pd.Series]) -> pd.Categorical:
    """Categorical columns of several reads as one, typed as one read of all their rows
    would type it (the sorted union of their strings as categories)."""
    return _categorical([(c.cat.codes.to_numpy(), c.cat.categories.to_numpy()) for c in columns])


def _categorical(parts: list[tuple[np.ndarray, np.ndarray]]) -> pd.Categorical:
    """Chunks' factorized codes recoded onto the sorted union of their strings."""
    categories = pd.Index(np.unique(np.concatenate([uniques for _, uniques in parts])))
    if categories.empty:
        # No string at all: the categories (and their dtype) pandas infers for only nulls.
        return pd.Categorical((None,) * sum(len(codes) for codes, _ in parts))
    codes = []
    for chunk_codes, uniques in parts:
        recode = np.append(categories.get_indexer(uniques), -1)  # code -1 stays -1
        codes.append(recode[chunk_codes])
    return pd.Categorical.from_codes(np.concatenate(codes), categories=categories)
