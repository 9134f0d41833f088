"""The SQLite reader's child process: typed batches per statement, errors that name the
file, and no child left once the reader is closed or dropped."""

from __future__ import annotations

import gc
import sqlite3
import time
from pathlib import Path

import psutil
import pyarrow as pa
import pytest

from inferx_pipeline.errors import StoreError
from inferx_pipeline.sqlite_arrow import ArrowReader


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = tmp_path / "t.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE t (s TEXT, i INTEGER, f REAL)")
        # Rows 1-3 have no text: SQLite gives the driver no type for ``s`` there.
        rows = [(None, 1, 0.5), (None, 2, None), (None, 3, 1.5), ("b", 4, 2.5), ("a", None, 3.5)]
        conn.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
    return path


def _readers() -> list[psutil.Process]:
    mine = psutil.Process().children(recursive=True)
    return [p for p in mine if "inferx_pipeline.sqlite_arrow" in " ".join(p.cmdline())]


def _until_none_left() -> None:
    deadline = time.monotonic() + 10
    while _readers():
        assert time.monotonic() < deadline, f"reader children left: {_readers()}"
        time.sleep(0.05)


def test_each_statement_is_one_batch_typed_as_asked(database: Path) -> None:
    reader = ArrowReader(database)
    try:
        sql = "SELECT s, i, f FROM t WHERE rowid BETWEEN ? AND ?"
        table = reader.read(
            [(sql, [1, 3]), (sql, [4, 5]), (sql, [9, 9])], ["dictionary", "int64", "float64"]
        )
        assert [len(chunk) for chunk in table.column(1).chunks] == [3, 2, 0]  # one per statement
        assert table.schema.types == [
            pa.dictionary(pa.int32(), pa.string()),
            pa.int64(),
            pa.float64(),
        ]
        assert table.column(0).cast(pa.string()).to_pylist() == [None, None, None, "b", "a"]
        assert table.column(1).to_pylist() == [1, 2, 3, 4, None]
        assert table.column(2).to_pylist() == [0.5, None, 1.5, 2.5, 3.5]
        # The same child answers again, with text bound as a parameter.
        again = reader.read([("SELECT s FROM t WHERE s = ?", ["a"])], ["string"])
        assert again.column(0).to_pylist() == ["a"] and len(_readers()) == 1
    finally:
        reader.close()
    _until_none_left()


@pytest.mark.parametrize("before", [0, 1], ids=["first-statement", "after-a-batch"])
def test_a_failed_read_names_the_file_and_the_next_read_starts_afresh(
    database: Path, before: int
) -> None:
    reader = ArrowReader(database)
    statements = [("SELECT i FROM t", [])] * before + [("SELECT i FROM gone", [])]
    try:
        match = rf"^{database}: ADBC read failed: .*no such table: gone"
        with pytest.raises(StoreError, match=match):
            reader.read(statements, ["int64"])
        _until_none_left()
        assert reader.read([("SELECT count(*) FROM t", [])], ["int64"]).column(0).to_pylist() == [5]
    finally:
        reader.close()


def test_a_dropped_reader_leaves_no_child(database: Path) -> None:
    reader = ArrowReader(database)
    reader.read([("SELECT i FROM t", [])], ["int64"])
    assert len(_readers()) == 1
    del reader
    gc.collect()
    _until_none_left()
