"""Set-based reads of the results table into typed pandas columns.

A SQLite file of at least two ``ROWS_PER_RANGE`` row ids is read through
``sqlite_arrow`` (``_fetch_arrow``): ADBC in a child process steps the query in C,
without the GIL, one row-id range per core at once, and sends Arrow columns, so no cell
becomes a Python object. The 1M-row leaderboard's history read (28 columns) took 7.9 to
8.5 s through ``sqlite3``, two thirds of it building a Python object per cell, and takes
2.8 to 3.2 s so (2026-12-07, 2 cores, the newest images' rows included).

PostgreSQL, an in-memory SQLite and a smaller file are read from the DBAPI cursor
directly (no SQLAlchemy row or type processing), chunk by chunk: each chunk of rows
becomes one numpy structured array (a loop in C, not a transpose and a conversion per
column in Python), so a million rows never exist as a million Python tuples: memory is
bounded by ``CHUNK_ROWS`` rows of Python objects plus the typed columns. SQLite's page
cache is kept small for that scan (``_small_page_cache``).

Either way strings can come back as ``category``: factorized per chunk, their codes
merged onto one sorted set of categories at the end (one code per row), which is what
makes a million-row leaderboard fit in memory and group quickly.
"""

from __future__ import annotations

import ctypes
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
from sqlalchemy import (
    Boolean,
    ColumnClause,
    ColumnElement,
    Connection,
    DateTime,
    Float,
    Integer,
    Select,
    func,
    literal_column,
    select,
)

from inferx_pipeline.results.tables import RESULTS
from inferx_pipeline.sqlite_arrow import ArrowReader

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
# How each kind is stored in SQLite, as sqlite_arrow types the column it reads.
_STORED: dict[Kind, str] = {
    "bool": "int64", "int": "int64", "nullable_int": "int64", "float": "float64",
    "datetime": "string", "str": "string",
}  # fmt: skip
# A SQLite file of at least two ranges of this many row ids is read in ranges of about
# as many (``sqlite_arrow``: read at once, one per core, and sent as each is done, so the
# reader holds a few ranges at a time, not the whole result); a smaller one in this
# process, where a child's start would cost more than it saves.
ROWS_PER_RANGE = 100_000
_ROWID_COLUMN: ColumnClause[int] = literal_column(ROWID)
# glibc's malloc_trim (None elsewhere: musl, macOS): returns the heap's free pages.
_MALLOC_TRIM = getattr(ctypes.CDLL(None), "malloc_trim", None)


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
    conn: Connection,
    stmt: Select[Any],
    names: Sequence[str],
    *,
    categorical: bool = False,
    arrow: ArrowReader | None = None,
) -> pd.DataFrame:
    """Run ``stmt`` (selecting the results columns ``names``, in order) into a DataFrame.

    Dtypes do not depend on the backend: bool, int64, Int64 (nullable integers), float64,
    datetime64[us, UTC], and ``str`` or, with ``categorical``, ``category`` with sorted
    categories. A failing query raises SQLAlchemy's error or, for errors met while the
    driver's cursor runs or fetches, the DBAPI driver's own (unwrapped), or StoreError
    for a read through ``arrow``: the reader of a SQLite file (``sqlite_arrow``), which
    reads a table of at least two ``ROWS_PER_RANGE`` row ids in ranges.
    """
    kinds = [column_kind(name) for name in names]
    if arrow is not None and (ranges := _rowid_ranges(conn)):
        parts = _fetch_arrow(arrow, conn, stmt, ranges, kinds, categorical)
    else:
        parts = _fetch(conn, stmt, kinds, categorical)
    data = {}
    for index, (name, kind) in enumerate(zip(names, kinds, strict=True)):
        data[name] = _combine(kind, parts[index], categorical)
        parts[index] = []  # each column's chunks go as soon as it is whole: a lower peak
    return pd.DataFrame(data, columns=list(names))


def _driver_statement(conn: Connection, stmt: Select[Any]) -> tuple[str, Any]:
    """``stmt`` as the driver's SQL and arguments: a tuple for SQLite's ``?`` (values as
    the store writes them, ``_sqlite_value``), a dict for psycopg2's named parameters."""
    compiled = stmt.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
    params = compiled.params
    if compiled.positional:
        values = (params[key] for key in compiled.positiontup or ())
        return str(compiled), tuple(map(_sqlite_value, values))
    return str(compiled), params


def _fetch(
    conn: Connection, stmt: Select[Any], kinds: list[Kind], categorical: bool
) -> list[list[Any]]:
    """Per column, its converted chunks (at least one, maybe empty)."""
    sql, args = _driver_statement(conn, stmt)
    dtype = np.dtype([(f"c{i}", _FIELD[kind]) for i, kind in enumerate(kinds)])
    parts: list[list[Any]] = [[] for _ in kinds]
    with _small_page_cache(conn):
        cursor = conn.connection.cursor()
        try:
            cursor.execute(sql, args)
            # An empty result still makes one (empty) chunk: it carries the dtypes.
            while (rows := cursor.fetchmany(CHUNK_ROWS)) or not parts[0]:
                table = np.array(rows, dtype=dtype)
                for index, kind in enumerate(kinds):
                    parts[index].append(_convert(kind, table[f"c{index}"], categorical))
                del rows, table
        finally:
            cursor.close()
    return parts


def _fetch_arrow(
    arrow: ArrowReader,
    conn: Connection,
    stmt: Select[Any],
    ranges: list[tuple[ColumnElement[bool]]],
    kinds: list[Kind],
    categorical: bool,
) -> list[list[Any]]:
    """``_fetch`` for a large SQLite file: the query's Arrow columns (``sqlite_arrow``, ADBC
    in a process of its own), one chunk per range of row ids, the ranges read at once. It
    sees what is committed, as every read through a fresh ``engine.connect()`` does."""
    statements = [_driver_statement(conn, stmt.where(*bounds)) for bounds in ranges]
    # Categories are encoded by the child, in parallel, and sent as codes.
    stored = ["dictionary" if categorical and kind == "str" else _STORED[kind] for kind in kinds]
    table = arrow.read(statements, stored)
    parts: list[list[Any]] = [[] for _ in kinds]
    columns = table.columns
    del table
    for index, kind in enumerate(kinds):
        # Each Arrow column is freed once converted: the peak holds one column twice.
        parts[index] = [_from_arrow(kind, chunk, categorical) for chunk in columns[index].chunks]
        columns[index] = None
    # Arrow's allocator keeps freed memory for reuse; the frames never come back to it.
    pa.default_memory_pool().release_unused()
    # The stream came in as Python bytes, whose pages glibc keeps in its heap once freed
    # (140 MB after a million rows): hand them back, or the rest of the build carries them.
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)
    return parts


def _rowid_ranges(conn: Connection) -> list[tuple[ColumnElement[bool]]]:
    """Where-clauses that split the results table by row id into ranges of about
    ``ROWS_PER_RANGE`` row ids; none for a table of fewer than two ranges."""
    # Two scalar subqueries: SQLite reads one end of the row-id b-tree for a lone min()
    # or max(), but scans the table for both in one select.
    ends = [
        select(end(_ROWID_COLUMN)).select_from(RESULTS).scalar_subquery()
        for end in (func.min, func.max)
    ]
    low, high = conn.execute(select(*ends)).one()
    count = 1 if low is None else (high - low + 1) // ROWS_PER_RANGE
    if count <= 1:
        return []
    step = -(-(high - low + 1) // count)  # ceiling: the last range ends past ``high``
    starts = [low + step * index for index in range(count)]
    return [(_ROWID_COLUMN.between(start, start + step - 1),) for start in starts]


# How SQLAlchemy's SQLite dialect stores a DateTime (its DATETIME storage format).
_SQLITE_DATETIME_TEXT = "%Y-%m-%d %H:%M:%S.%f"


def _sqlite_value(value: Any) -> Any:
    """A bound value as the store writes it to SQLite: a datetime as the column's text,
    in UTC (sqlite3 would bind an aware one with its offset, which compares wrongly as
    text; ADBC would bind it as a number), and a bool as 0 or 1."""
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value.strftime(_SQLITE_DATETIME_TEXT)
    if isinstance(value, bool):
        return int(value)
    return value


def _from_arrow(kind: Kind, array: pa.Array, categorical: bool) -> Any:
    """One Arrow column, as ``_fetch_arrow`` has ``sqlite_arrow`` type it, as ``_convert``
    gives a chunk."""
    if kind == "str" and categorical:  # dictionary-encoded by the child
        codes = array.indices.fill_null(-1).to_numpy(zero_copy_only=False)
        return codes, array.dictionary.to_numpy(zero_copy_only=False)
    if kind == "str":
        return array.to_numpy(zero_copy_only=False)
    if kind == "datetime":
        try:
            naive = array.cast(pa.timestamp("us"))
        except pa.ArrowInvalid:  # not naive ISO text (an offset): as the DBAPI path reads it
            return _datetimes(array.to_numpy(zero_copy_only=False))
        return pd.Series(naive.to_numpy(zero_copy_only=False)).dt.tz_localize("UTC")
    if kind == "nullable_int":
        missing = array.is_null().to_numpy(zero_copy_only=False)
        values = array.fill_null(0).to_numpy(zero_copy_only=False, writable=True)
        return pd.arrays.IntegerArray(values, missing)
    if kind == "bool":  # stored as 0 or 1
        return array.to_numpy(zero_copy_only=False) != 0
    return array.to_numpy(zero_copy_only=False, writable=True)


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
