"""A SQLite file's query results as Arrow columns, read by ADBC in a process of its own.

ADBC's SQLite driver steps a query in C, without the GIL, and hands back Arrow columns,
so no cell becomes a Python object, and several queries run at once on threads. It
links its own copy of SQLite, though, and two copies of SQLite in one process cancel
each other's POSIX locks when either closes the file ("How To Corrupt An SQLite Database
File", 2.2.1): read beside the store's ``sqlite3`` connections, a read missed rows
committed before it began. So an ``ArrowReader`` runs the queries in a child process
(``python -m inferx_pipeline.sqlite_arrow FILE``) that opens the file with ADBC's SQLite
alone, as any other reader process would. The child is started at the first read (its
imports, pyarrow and ADBC's own API, cost about 0.25 s) and answers every later one
until ``close``.

Each request is one JSON line on the child's stdin, ``{"statements": [[sql, [args]],
...], "types": [...]}``. The child runs the statements one per core at once and answers
with one Arrow IPC stream on its stdout: one record batch per statement, in order, each
sent once it and those before it are done, each column cast to its ``types`` entry
(``TYPES``; ``dictionary``, for strings read as categories, sends each distinct string
once per batch). SQLite reports no column types, so the driver infers them from a
result's first batch and fails the read when a later batch disagrees; each statement is
read as one batch, and the cast makes the batches of a column NULL in one range and text
in another agree. A failed request ends the child with one line on stderr, which the
parent raises as a ``StoreError``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
import tempfile
import threading
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

import pyarrow as pa

from inferx_pipeline.errors import StoreError
from inferx_pipeline.parentdeath import preexec

# One batch of every row (see the module docstring); the driver takes at most int32.
_BATCH_ROWS = {"adbc.sqlite.query.batch_rows": str(2**30)}
# SQLite answers "database is locked" at once by default, and the process that opens a
# WAL file first holds it a moment; the store's own sqlite3 connections wait 5 s.
_BUSY_TIMEOUT_MS = 5000
_PIPE_BYTES = 1 << 20
TYPES = {
    "string": pa.string(),
    "dictionary": pa.dictionary(pa.int32(), pa.string()),  # strings, each distinct one once
    "int64": pa.int64(),
    "float64": pa.float64(),
}


class ArrowReader:
    """Reads ``path`` through a child process (see the module docstring); thread-safe,
    one request at a time. The child ends at ``close``, or when the reader is garbage."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._child: subprocess.Popen[bytes] | None = None
        self._end: weakref.finalize[Any, ArrowReader] | None = None
        self._lock = threading.Lock()

    def read(
        self, statements: Sequence[tuple[str, Sequence[Any]]], types: Sequence[str]
    ) -> pa.Table:
        """The rows of each of ``statements`` (SQL with ``?`` and its arguments: str, int,
        float or None), one record batch each, columns typed as ``types`` names (``TYPES``
        keys). Raises StoreError naming the file and the child's error when it fails."""
        request = json.dumps({"statements": statements, "types": list(types)}) + "\n"
        with self._lock:
            child = self._child or self._start()
            assert child.stdin and child.stdout  # both are pipes
            try:
                child.stdin.write(request.encode())
                child.stdin.flush()
                stream = pa.ipc.open_stream(child.stdout)
                batches = list(stream)
                # A child that failed after some batches may leave a stream that reads as
                # whole up to there: one batch per statement is the proof it is not.
                if len(batches) == len(statements):
                    return pa.Table.from_batches(batches, schema=stream.schema)
            except (pa.ArrowInvalid, OSError):  # no stream, or a broken one: the child failed
                pass
            raise StoreError(f"{self.path}: ADBC read failed: {self._stop()}")

    def close(self) -> None:
        """End the child (its stdin closes: it exits), if one was started."""
        with self._lock:
            self._stop()

    def _start(self) -> subprocess.Popen[bytes]:
        # stderr to a file: a pipe nobody reads until the end could fill and stop the child.
        errors = tempfile.TemporaryFile()  # noqa: SIM115  closed by _end, with the child
        child = subprocess.Popen(
            [sys.executable, "-m", "inferx_pipeline.sqlite_arrow", str(self.path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            preexec_fn=preexec(),  # the kernel's parent-death signal, nothing else
        )
        assert child.stdout  # a pipe
        # A 1 MiB pipe (Linux's most for a process without CAP_SYS_RESOURCE) instead of
        # 64 KiB: a million rows' 230 MB cross in a third less time.
        with contextlib.suppress(AttributeError, OSError):
            fcntl.fcntl(child.stdout.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        self._child, self._end = child, weakref.finalize(self, _end, child, errors)
        return child

    def _stop(self) -> str:
        """End the child (if any); what it said last."""
        end, self._child, self._end = self._end, None, None
        said = end() if end is not None else None  # None: already ended (finalizers run once)
        return str(said or "")


def _end(child: subprocess.Popen[bytes], errors: IO[bytes]) -> str:
    """Close ``child``'s pipes (it exits), wait for it, and return the last line it wrote
    to ``errors`` (or its exit code)."""
    for pipe in (child.stdin, child.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):  # a broken pipe: the child is gone already
                pipe.close()
    code = child.wait()
    errors.seek(0)
    lines = errors.read().decode(errors="replace").strip().splitlines()
    errors.close()
    return lines[-1] if lines else f"the reader exited {code}"


def _run(path: str, sql: str, args: list[Any], schema: pa.Schema) -> pa.RecordBatch:
    """One statement's rows as one batch of ``schema``, on ADBC's own API (its DBAPI
    module imports pandas, a third of a second of the child's start)."""
    import adbc_driver_manager
    import adbc_driver_sqlite  # the child's alone (see the module docstring)

    with (
        adbc_driver_sqlite.connect(path) as db,
        adbc_driver_manager.AdbcConnection(db) as conn,
        adbc_driver_manager.AdbcStatement(conn) as stmt,
    ):
        stmt.set_sql_query(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        stmt.execute_update()
        stmt.set_options(**_BATCH_ROWS)
        stmt.set_sql_query(sql)
        if args:
            names = [str(index) for index in range(len(args))]
            stmt.bind(pa.record_batch([pa.array([value]) for value in args], names=names))
        handle, _ = stmt.execute_query()
        table = pa.RecordBatchReader.from_stream(handle).read_all()  # Arrow C stream protocol
    if table.num_rows == 0:  # the driver's types for no rows are guesses: use the schema's
        return pa.RecordBatch.from_pylist([], schema=schema)
    raw = table.combine_chunks().columns
    del table
    typed = []
    for field in schema:
        # Each raw column goes once typed: the peak holds the result about once, not twice.
        typed.append(_typed(raw.pop(0).chunk(0), field.type))
    return pa.RecordBatch.from_arrays(typed, schema=schema)


def _typed(column: pa.Array, wanted: pa.DataType) -> pa.Array:
    if pa.types.is_dictionary(wanted):
        return column.cast(pa.string()).dictionary_encode()
    return column.cast(wanted)


def _answer(path: str, request: dict[str, Any]) -> None:
    schema = pa.schema([(f"c{i}", TYPES[name]) for i, name in enumerate(request["types"])])
    statements = request["statements"]
    # One statement per core at once (ADBC and Arrow's casts run without the GIL), each
    # batch sent as soon as it and those before it are done: the parent receives while
    # later statements run, and the child holds a few batches, not the whole result.
    threads = min(len(statements), os.cpu_count() or 1)
    with ThreadPoolExecutor(threads, thread_name_prefix="sqlite-read") as pool:
        # No context manager: on a failure it would end the stream as if complete.
        stream = pa.ipc.new_stream(sys.stdout.buffer, schema)
        for batch in pool.map(lambda st: _run(path, st[0], st[1], schema), statements):
            stream.write_batch(batch)
            del batch
        stream.close()
    sys.stdout.buffer.flush()
    # Arrow's allocator keeps freed memory for reuse: give it back while the child idles.
    pa.default_memory_pool().release_unused()


def main() -> None:
    """The child: one JSON request per stdin line, one Arrow IPC stream each on stdout,
    until stdin closes (see the module docstring)."""
    path = sys.argv[1]
    for line in sys.stdin:
        try:
            _answer(path, json.loads(line))
        except Exception as err:  # any failure is the parent's one line
            sys.stderr.write(f"{type(err).__name__}: {err}".replace("\n", " ") + "\n")
            sys.stderr.flush()
            os._exit(1)  # at once: no cleanup may end the half-sent stream as if complete


if __name__ == "__main__":
    main()
