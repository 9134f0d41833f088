"""``ResultStore.read_frame`` on SQLite and PostgreSQL: the stored values in the documented
dtypes, in one chunk or many, plain or categorical; empty reads, failing queries, and
SQLite's page cache around a read. A SQLite file is read through ADBC (Arrow), an
in-memory one through its DBAPI cursor: both give the same frames."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import text

from inferx_pipeline.errors import StoreError
from inferx_pipeline.results import reader
from inferx_pipeline.results.filters import ResultFilter
from inferx_pipeline.results.record import RECORD_COLUMNS
from inferx_pipeline.results.store import ResultStore
from tests.results.samples import record

# A column of each kind the reader types (the nullable ones with nulls in them), and the
# dtype the read_frame docstring promises for it.
DTYPES = {
    "result_id": "str",
    "sku": "str",
    "image_digest": "str",
    "isl": "Int64",
    "conc": "int64",
    "simulated": "bool",
    "valid": "bool",
    "tput_per_gpu": "float64",
    "ttft_p99_s": "float64",
    "started_at": "datetime64[us, UTC]",
    "finished_at": "datetime64[us, UTC]",
}
SKUS = ("h200", "b200", "mi355x", "h100", "b200", "mi355x", "h200")


def _written(store: ResultStore) -> pd.DataFrame:
    """Seven rows with nulls in every nullable column of ``DTYPES``, as stored."""
    records = [record(i, sku=sku, conc=2**i) for i, sku in enumerate(SKUS)]
    frame = pd.DataFrame([r.model_dump() for r in records], columns=list(RECORD_COLUMNS))
    # Four nulls among seven rows: read two rows a chunk, some chunk has no digest at all.
    frame["image_digest"] = [None, "sha256:b", None, "sha256:a", None, "sha256:c", None]
    frame["isl"] = [1024, None, 8192, 1024, None, 2048, 1024]
    frame.loc[1:2, "ttft_p99_s"] = float("nan")
    frame.loc[2:3, "finished_at"] = None
    frame.loc[4, "valid"] = False
    assert store.write_frame(frame).written == len(SKUS)
    return frame


def _expected(written: pd.DataFrame, categorical: bool) -> pd.DataFrame:
    frame = written[list(DTYPES)].astype(DTYPES)
    if categorical:
        strings = [name for name, dtype in DTYPES.items() if dtype == "str"]
        frame = frame.astype(dict.fromkeys(strings, "category"))
    return _by_id(frame)


def _by_id(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values("result_id").reset_index(drop=True)


@pytest.mark.parametrize("categorical", [False, True], ids=["plain", "categorical"])
@pytest.mark.parametrize("chunk_rows", [reader.CHUNK_ROWS, 2], ids=["one-chunk", "chunks-of-2"])
def test_read_frame_gives_the_stored_values_in_the_documented_dtypes(
    store: ResultStore, monkeypatch: pytest.MonkeyPatch, categorical: bool, chunk_rows: int
) -> None:
    written = _written(store)
    monkeypatch.setattr(reader, "CHUNK_ROWS", chunk_rows)
    got = store.read_frame(columns=list(DTYPES), categorical=categorical)
    want = _expected(written, categorical)
    pd.testing.assert_frame_equal(_by_id(got), want, check_exact=True)
    for name, dtype in DTYPES.items():
        if dtype == "str" and categorical:
            categories = list(got[name].cat.categories)
            assert categories == sorted(set(written[name].dropna())), name
        else:
            assert str(got[name].dtype) == dtype, name


@pytest.mark.parametrize("categorical", [False, True], ids=["plain", "categorical"])
def test_an_empty_read_has_the_same_dtypes(store: ResultStore, categorical: bool) -> None:
    _written(store)
    nothing = ResultFilter(recipe_ids=("no-such-recipe",))
    got = store.read_frame(nothing, list(DTYPES), categorical=categorical)
    want = _expected(pd.DataFrame({name: [] for name in DTYPES}), categorical)
    assert got.empty
    assert got.dtypes.astype(str).to_dict() == want.dtypes.astype(str).to_dict()


@pytest.mark.parametrize("chunk_rows", [reader.CHUNK_ROWS, 2], ids=["one-chunk", "chunks-of-2"])
def test_a_string_column_of_only_nulls_reads_as_nulls(
    store: ResultStore, monkeypatch: pytest.MonkeyPatch, chunk_rows: int
) -> None:
    _written(store)
    monkeypatch.setattr(reader, "CHUNK_ROWS", chunk_rows)
    plain = store.read_frame(columns=["slurm_cluster"])["slurm_cluster"]
    coded = store.read_frame(columns=["slurm_cluster"], categorical=True)["slurm_cluster"]
    assert str(plain.dtype) == "str" and plain.isna().all() and len(plain) == len(SKUS)
    assert isinstance(coded.dtype, pd.CategoricalDtype) and coded.isna().all()
    assert len(coded.cat.categories) == 0 and len(coded) == len(SKUS)


def test_a_failing_query_is_a_store_error_naming_the_store(store: ResultStore) -> None:
    _written(store)
    with store.engine.begin() as conn:
        conn.execute(text("ALTER TABLE results RENAME TO results_gone"))
    where = store.url.render_as_string(hide_password=True)
    with pytest.raises(StoreError, match=rf"^{re.escape(where)}: read failed"):
        store.read_frame(columns=["sku"], categorical=True)


def test_the_sqlite_page_cache_is_the_stores_again_after_a_read(tmp_path: Path) -> None:
    store = ResultStore(f"sqlite:///{tmp_path / 'r.sqlite'}")
    _written(store)
    with store.engine.connect() as conn:
        (before,) = conn.exec_driver_sql("PRAGMA cache_size").one()
    assert len(store.read_frame(columns=["sku"], categorical=True)) == len(SKUS)
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA cache_size").one()[0] == before
    store.close()


@pytest.mark.parametrize("categorical", [False, True], ids=["plain", "categorical"])
@pytest.mark.parametrize("rows_per_range", [reader.ROWS_PER_RANGE, 2], ids=["small", "ranges"])
def test_a_sqlite_file_and_an_in_memory_store_read_the_same_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, categorical: bool, rows_per_range: int
) -> None:
    # Ranges of 2 rows: the file is read through ADBC in a child, three ranges of its seven
    # rows; else, as the in-memory database, through the DBAPI cursor in this process.
    monkeypatch.setattr(reader, "ROWS_PER_RANGE", rows_per_range)
    stores = [ResultStore(f"sqlite:///{tmp_path / 'r.sqlite'}"), ResultStore("sqlite://")]
    records = [record(i, sku=sku, conc=2**i) for i, sku in enumerate(SKUS)]
    frame = pd.DataFrame([r.model_dump() for r in records], columns=list(RECORD_COLUMNS))
    frame["started_at"] = pd.Timestamp("2026-01-01", tz="UTC") + pd.to_timedelta(
        range(len(SKUS)), unit="h"
    )
    # The first range's digests are all NULL: SQLite gives ADBC no type for them there.
    frame.loc[[0, 1, 2, 5], "image_digest"] = None
    frame.loc[2, "isl"] = None
    # An aware bound in another zone: rows from 03:00 UTC on, the last one left out.
    window = ResultFilter(
        since=datetime(2026, 1, 1, 5, tzinfo=timezone(timedelta(hours=2))),
        until=datetime(2026, 1, 1, 6, 30, tzinfo=UTC),
    )
    reads = []
    for store in stores:
        assert store.write_frame(frame).written == len(SKUS)
        reads.append(
            [store.read_frame(f, list(DTYPES), categorical=categorical) for f in (None, window)]
        )
        store.close()
    (file_all, file_window), (memory_all, memory_window) = reads
    # Both in row-id order, the ranges' rows too.
    pd.testing.assert_frame_equal(file_all, memory_all, check_exact=True)
    pd.testing.assert_frame_equal(_by_id(file_window), _by_id(memory_window), check_exact=True)
    assert file_all["image_digest"].notna().tolist() == frame["image_digest"].notna().tolist()
    hours = file_window["started_at"].dt.hour.tolist()
    assert sorted(hours) == [3, 4, 5, 6] and len(file_all) == len(SKUS)
