"""The PostgreSQL write path: COPY a whole batch, and classify rows only when a key was taken.

A batch arrives in the bind form (``sqlite_bulk.record_values``, ``frames.bind_rows``: NULL
as NaN, booleans as 0/1, datetimes as naive UTC text) and goes to ``COPY ... FROM STDIN`` as
CSV with every string quoted and every number bare. So ``NULL 'nan'`` matches exactly the
NaNs (a string "nan" is quoted and stays a string), and with the transaction's time zone
set to UTC the naive text is read as UTC.

The COPY runs in a savepoint. When a row's artifact or result id is already stored, or
repeated in the batch, a unique index stops it: the savepoint is rolled back, the batch's
keys are looked up once, each row is classified (already stored, repeated, or a result-id
conflict) and only the new rows are copied; a batch whose first row is stored (a repeated
ingest, most likely) is classified before any COPY. A concurrent writer that stores one of them in
between stops that COPY the same way, and the batch is classified again.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection

from inferx_pipeline.results.record import RECORD_COLUMNS
from inferx_pipeline.results.sqlite_bulk import RID, SHA, ChunkResult

Row = tuple[Any, ...]  # one result in RECORD_COLUMNS order, in the bind form
# Tries of one batch's COPY: the optimistic one, then after each classification.
COPY_ATTEMPTS = 3
# Bytes psycopg2 sends per COPY message (its default, 8 KiB, costs a call per few rows).
COPY_BUFFER = 1 << 20

_COPY = f"COPY results ({', '.join(RECORD_COLUMNS)}) FROM STDIN WITH (FORMAT csv, NULL 'nan')"
_SAVEPOINT = "inferx_copy"
UNIQUE_VIOLATION = "23505"  # PostgreSQL's SQLSTATE


def write_chunk(conn: Connection, chunk: Sequence[Row]) -> ChunkResult:
    """Copy ``chunk`` into ``results`` in the open transaction of ``conn``; rows whose
    artifact or result id is already stored are skipped and classified (module docstring)."""
    cursor = conn.connection.cursor()
    try:
        cursor.execute("SET LOCAL TIME ZONE 'UTC'")  # how the bind form's naive text reads
        result, attempt = ChunkResult(written=chunk), 1
        if chunk and _stored(cursor, chunk[0]):  # most likely a repeat: skip a failing COPY
            result = _classify(cursor, chunk)
        integrity = conn.dialect.loaded_dbapi.IntegrityError
        while not _copied(cursor, result.written, integrity, last=attempt == COPY_ATTEMPTS):
            result, attempt = _classify(cursor, chunk), attempt + 1
        return result
    finally:
        cursor.close()


def _copied(cursor: Any, rows: Sequence[Row], integrity: type[Exception], *, last: bool) -> bool:
    """COPY ``rows`` in a savepoint; False (rolled back) when a unique key was taken."""
    if not rows:
        return True
    cursor.execute(f"SAVEPOINT {_SAVEPOINT}")
    try:
        cursor.copy_expert(_COPY, _csv(rows), size=COPY_BUFFER)
    except integrity as err:
        cursor.execute(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
        if last or getattr(err, "pgcode", None) != UNIQUE_VIOLATION:
            raise
        return False
    cursor.execute(f"RELEASE SAVEPOINT {_SAVEPOINT}")
    return True


def _csv(rows: Sequence[Row]) -> io.StringIO:
    text = io.StringIO()
    writer = csv.writer(text, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
    writer.writerows(rows)
    text.seek(0)
    return text


def _classify(cursor: Any, chunk: Sequence[Row]) -> ChunkResult:
    """Tell ``chunk``'s new rows from stored, repeated and conflicting ones, by their keys."""
    held = _held(cursor, chunk)
    held_shas = set(held.values())
    written: list[Row] = []
    result = ChunkResult(written=written)
    for row in chunk:
        sha, rid = row[SHA], row[RID]
        if sha in held_shas:
            result.dupes += 1
        elif rid in held:
            result.conflicts.append((row, held[rid]))
        else:
            written.append(row)
            held[rid] = sha
            held_shas.add(sha)
    return result


def _stored(cursor: Any, row: Row) -> bool:
    cursor.execute(
        "SELECT 1 FROM results WHERE artifact_sha256 = %s OR result_id = %s", (row[SHA], row[RID])
    )
    return cursor.fetchone() is not None


def _held(cursor: Any, chunk: Sequence[Row]) -> dict[str, str]:
    """result_id -> artifact_sha256 of stored rows sharing either key with ``chunk``."""
    held: dict[str, str] = {}
    # Two probes, not one OR: each uses its own unique index. An array is one parameter.
    for index, column in ((SHA, "artifact_sha256"), (RID, "result_id")):
        keys = [row[index] for row in chunk]
        cursor.execute(
            f"SELECT result_id, artifact_sha256 FROM results WHERE {column} = ANY(%s)", (keys,)
        )
        held.update(cursor.fetchall())
    return held
