"""The SQLite write path: values in the driver's fastest form, insert first, classify misses.

Two things make a 74-column bulk insert cheap in Python's ``sqlite3``:

- Only exact ``int``, ``float`` and ``str`` values bind without a lookup in the module's
  adapter registry; ``None`` and ``bool`` each cost one. Booleans are bound as 0/1 (what
  SQLAlchemy stores) and NULLs as ``float('nan')``, which SQLite stores as NULL.
- The idempotency check runs only when needed: a batch is inserted with ``ON CONFLICT DO
  NOTHING`` and, when every row went in (the common case), no row is probed. When some
  did not, the batch's keys are looked up once and each row is classified exactly as the
  probe-first path does (already stored, repeated in the batch, or a result-id conflict).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

from sqlalchemy import Connection, DateTime
from sqlalchemy.dialects import sqlite

from inferx_pipeline.results.record import RECORD_COLUMNS
from inferx_pipeline.results.tables import RESULTS

Row = tuple[Any, ...]  # one result in RECORD_COLUMNS order
SHA = RECORD_COLUMNS.index("artifact_sha256")
RID = RECORD_COLUMNS.index("result_id")
# The text SQLAlchemy's SQLite DateTime writes and parses back (naive, UTC).
DATETIME_TEXT = "%Y-%m-%d %H:%M:%S.%f"
# Bound in place of None: SQLite stores a NaN double as NULL.
NULL = float("nan")
# SQLite allows 32766 bound parameters per statement.
PROBE_ROWS = 10_000

_INSERT = str(
    sqlite.insert(RESULTS)
    .on_conflict_do_nothing()
    .compile(dialect=sqlite.dialect(), column_keys=list(RECORD_COLUMNS))
)
_DATETIMES = tuple(
    i for i, name in enumerate(RECORD_COLUMNS) if isinstance(RESULTS.c[name].type, DateTime)
)


@dataclass
class ChunkResult:
    """What one batch did: rows written, artifacts already there, result-id conflicts."""

    written: Sequence[Row] = ()  # all of a batch that went in whole, unconverted
    dupes: int = 0
    conflicts: list[tuple[Row, str]] = field(default_factory=list)  # (row, sha holding its id)


def record_values(row: Row) -> Row:
    """A ``ResultRecord.model_dump()`` row as SQLite binds it fastest (see module docstring)."""
    values = list(row)
    for index, value in enumerate(values):
        if value is None:
            values[index] = NULL
        elif value is True or value is False:
            values[index] = int(value)
    for index in _DATETIMES:
        value = values[index]
        if value is not NULL:
            values[index] = value.astimezone(UTC).strftime(DATETIME_TEXT)
    return tuple(values)


def write_chunk(conn: Connection, chunk: Sequence[Row]) -> ChunkResult:
    """Insert ``chunk`` (rows from ``record_values`` or ``frames.bind_rows``) in the open
    transaction of ``conn``; rows whose artifact or result id is already stored are skipped."""
    cursor = conn.connection.cursor()
    try:
        before = cursor.execute("SELECT coalesce(max(rowid), 0) FROM results").fetchone()[0]
        cursor.executemany(_INSERT, chunk)
        inserted = cursor.rowcount
    finally:
        cursor.close()
    if inserted == len(chunk):
        return ChunkResult(written=chunk)
    return _classify(conn, chunk, before)


def _classify(conn: Connection, chunk: Sequence[Row], before: int) -> ChunkResult:
    """Tell written rows from skipped ones after an insert that skipped some.

    A stored row with a rowid above ``before`` was inserted by this batch, by the first
    batch row with its key; every other row is a duplicate (its artifact is stored) or a
    conflict (its result id is stored from another artifact), as in the probe-first path.
    """
    held = _held(conn, chunk)  # result_id -> (artifact_sha256, rowid)
    shas = {sha for sha, _ in held.values()}
    claimed: set[str] = set()
    written: list[Row] = []
    result = ChunkResult(written=written)
    for row in chunk:
        sha, rid = row[SHA], row[RID]
        stored = held.get(rid)
        if stored is not None and stored[0] == sha and stored[1] > before and rid not in claimed:
            claimed.add(rid)
            written.append(row)
        elif sha in shas:
            result.dupes += 1
        elif stored is not None:
            result.conflicts.append((row, stored[0]))
    return result


def _held(conn: Connection, chunk: Sequence[Row]) -> dict[str, tuple[str, int]]:
    held: dict[str, tuple[str, int]] = {}
    cursor = conn.connection.cursor()
    try:
        for start in range(0, len(chunk), PROBE_ROWS):
            part = chunk[start : start + PROBE_ROWS]
            # Two probes, not one OR: SQLite uses an index per IN list only when they are apart.
            for index, column in ((SHA, "artifact_sha256"), (RID, "result_id")):
                keys = [row[index] for row in part]
                marks = ", ".join("?" * len(keys))
                sql = f"SELECT result_id, artifact_sha256, rowid FROM results WHERE {column} IN "
                sql += f"({marks})"
                for rid, sha, rowid in cursor.execute(sql, keys):
                    held[rid] = (sha, rowid)
    finally:
        cursor.close()
    return held
