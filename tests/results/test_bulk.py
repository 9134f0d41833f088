"""Bulk writes and large reads of ResultStore on SQLite and PostgreSQL: one batch mixing
new, stored, repeated and conflicting rows; nulls; filters pushed to SQL; categorical reads."""

from __future__ import annotations

import pandas as pd

from inferx_pipeline.results.filters import ResultFilter
from inferx_pipeline.results.record import RECORD_COLUMNS
from inferx_pipeline.results.store import ResultStore
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
