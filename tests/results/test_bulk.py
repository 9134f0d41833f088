"""Bulk writes and large reads of ResultStore on SQLite and PostgreSQL: batches mixing
new, stored, repeated and conflicting rows; nulls; filters pushed to SQL; categorical reads."""

from __future__ import annotations

import pandas as pd

from inferx_pipeline.results.filters import ResultFilter
from inferx_pipeline.results.frames import ColumnRows
from inferx_pipeline.results.record import RECORD_COLUMNS
from inferx_pipeline.results.store import Rejection, ResultStore
from tests.results.samples import record, sha


def _frame(*records: object) -> pd.DataFrame:
    rows = [r.model_dump() for r in records]  # type: ignore[attr-defined]  # ResultRecords
    return pd.DataFrame(rows, columns=list(RECORD_COLUMNS))


def test_one_batch_of_new_stored_repeated_and_conflicting_rows(store: ResultStore) -> None:
    stored = record(1)
    store.write([stored])
    clash = record(2).model_copy(update={"artifact_sha256": sha("other")})
    batch = _frame(stored, record(2), record(2), clash, record(3))
    report = store.write_frame(batch)
    assert (report.written, report.skipped_existing) == (2, 2)
    assert [r.code for r in report.rejections] == ["conflict"]
    assert store.count() == 3
    again = store.write_frame(batch)
    assert (again.written, again.skipped_existing, again.quarantined) == (0, 4, 1)


def test_write_frame_stores_nulls_and_booleans(store: ResultStore) -> None:
    frame = _frame(record(1), record(2))
    frame.loc[0, "ttft_p99_s"] = float("nan")
    frame["image_digest"] = [None, "sha256:abc"]
    store.write_frame(frame)
    back = store.read_frame().sort_values("result_id").set_index("result_id")
    first = frame.loc[0, "result_id"]
    assert pd.isna(back.loc[first, "ttft_p99_s"]) and pd.isna(back.loc[first, "image_digest"])
    assert set(back["image_digest"].dropna()) == {"sha256:abc"}
    assert back["simulated"].dtype == bool and back["isl"].dtype == "Int64"


def test_status_measured_and_image_filters_run_in_sql(store: ResultStore) -> None:
    failed = record(2).model_copy(update={"status": "failed"})
    idle = record(3).model_copy(update={"tput_per_gpu": 0.0})
    other = record(4, image="vllm/vllm-openai:v0.12.0")
    store.write([record(1), failed, idle, other])
    shown = ResultFilter(statuses=("ok",), measured_only=True)
    assert len(store.read_frame(shown)) == 2
    pair = ((other.recipe_id, "v0.12.0"),)
    picked = store.read_frame(shown.model_copy(update={"recipe_images": pair}))
    assert picked["result_id"].tolist() == [other.result_id]


def test_categorical_read_has_sorted_categories_and_the_same_values(store: ResultStore) -> None:
    store.write([record(1, sku="h200"), record(2, sku="b200", vendor="nvidia")])
    plain = store.read_frame(columns=["result_id", "sku", "tput_per_gpu"])
    coded = store.read_frame(columns=["result_id", "sku", "tput_per_gpu"], categorical=True)
    assert isinstance(coded["sku"].dtype, pd.CategoricalDtype)
    assert list(coded["sku"].cat.categories) == ["b200", "h200"]
    pd.testing.assert_frame_equal(
        coded.astype({"sku": "str", "result_id": "str"})
        .sort_values("result_id")
        .reset_index(drop=True),
        plain.sort_values("result_id").reset_index(drop=True),
    )


def test_a_batch_that_meets_stored_keys_rolls_back_only_itself(store_url: str) -> None:
    # Three batches of two: new, then one new and one stored, then one new and one conflict.
    store = ResultStore(store_url, batch_rows=2)
    stored = record(1)
    store.write([stored])
    clash = record(6).model_copy(update={"artifact_sha256": sha("other")})
    store.write([record(6)])
    report = store.write_frame(_frame(record(2), record(3), record(4), stored, record(5), clash))
    assert (report.written, report.skipped_existing) == (4, 1)
    assert [r.code for r in report.rejections] == ["conflict"]
    ids = set(store.read_frame(columns=["result_id"])["result_id"])
    assert ids == {record(i).result_id for i in range(1, 7)}
    store.close()


def test_write_frame_stores_text_verbatim_and_whole_numbers_as_integers(
    store: ResultStore,
) -> None:
    frame = _frame(record(1), record(2), record(3))
    frame["image_digest"] = ["nan", "", 'a "quoted", multi\nline value']
    frame["isl"] = [1024.0, float("nan"), 8192.0]  # a nullable integer column as floats
    frame["started_at"] = pd.to_datetime(
        ["2026-01-02 03:04:05.678901", None, "2026-01-03 00:00:00.000000"]
    )
    store.write_frame(frame)
    back = store.read_frame().set_index("result_id").loc[frame["result_id"]]
    assert back["image_digest"].tolist() == frame["image_digest"].tolist()
    assert back["isl"].tolist()[0::2] == [1024, 8192] and pd.isna(back["isl"].iloc[1])
    naive_utc = pd.Timestamp("2026-01-02 03:04:05.678901", tz="UTC")
    assert back["started_at"].iloc[0] == naive_utc and pd.isna(back["started_at"].iloc[1])


def test_write_frame_of_a_quarantined_artifact_releases_it(store: ResultStore) -> None:
    later = record(8)
    store.write([], [Rejection(path="x.json", artifact_sha256=later.artifact_sha256,
                               code="truncated-json", reason="not complete JSON")])  # fmt: skip
    assert store.write_frame(_frame(record(7), later)).written == 2
    assert store.quarantine() == []


def test_column_rows_slice_index_and_iterate_like_a_list_of_tuples() -> None:
    rows = ColumnRows([[1, 2, 3], ["a", "b", "c"]])
    assert list(rows) == [(1, "a"), (2, "b"), (3, "c")]
    assert len(rows) == 3 and rows[1] == (2, "b")
    assert list(rows[1:]) == [(2, "b"), (3, "c")] and len(rows[3:]) == 0
