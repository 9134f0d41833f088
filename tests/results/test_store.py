"""ResultStore on SQLite and PostgreSQL: migrations, idempotent and transactional writes, reads."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from inferx_pipeline.errors import StoreError
from inferx_pipeline.results import migrations
from inferx_pipeline.results.e2e_interactivity import E2E_INTVTY_COLUMNS
from inferx_pipeline.results.filters import ResultFilter
from inferx_pipeline.results.pull_runs import read_pull_runs
from inferx_pipeline.results.record import DEPLOYMENT_COLUMNS, PULL_COLUMNS, RECORD_COLUMNS
from inferx_pipeline.results.store import Rejection, ResultStore
from inferx_pipeline.results.tables import QUARANTINE, RESULTS, Base
from tests.results.samples import record, sha


def test_upgrade_on_empty_database_creates_the_models_schema(store_url: str) -> None:
    store = ResultStore(store_url)
    with store.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert context.get_current_revision() == "0011"
        assert compare_metadata(context, Base.metadata) == []
    indexes = {ix["name"] for ix in inspect(store.engine).get_indexes("results")}
    assert {"ix_results_group", "ix_results_history"} <= indexes
    store.close()


def test_pr_runs_recorded_before_baseline_images_read_none(store_url: str) -> None:
    engine = create_engine(store_url)
    with engine.begin() as conn:
        migrations.upgrade(conn, "0009")
        conn.execute(
            text("INSERT INTO pull_request_runs VALUES ('r1', 7, 'abc', 'sweep-enabled', 'x', "
                 "'2026-12-01 00:00:00')")
        )  # fmt: skip
    engine.dispose()
    store = ResultStore(store_url)
    (run,) = read_pull_runs(store)
    assert (run.run_id, run.baseline_recipe, run.baseline_image) == ("r1", "x", None)
    store.close()


def test_reopening_a_migrated_database_keeps_its_rows(store_url: str) -> None:
    ResultStore(store_url).write([record(1)])
    assert ResultStore(store_url).count() == 1


def test_rows_stored_before_the_slurm_columns_read_them_as_null(store_url: str) -> None:
    engine = create_engine(store_url)
    with engine.begin() as conn:
        migrations.upgrade(conn, "0003")
        old = record(1).model_dump(
            exclude={
                "slurm_job_id",
                "slurm_cluster",
                *E2E_INTVTY_COLUMNS,
                *PULL_COLUMNS,
                *DEPLOYMENT_COLUMNS,
            }
        )
        conn.execute(RESULTS.insert(), [old])  # the row as revision 0003 stored it
    engine.dispose()
    store = ResultStore(store_url)
    store.write([record(2).model_copy(update={"slurm_job_id": "7", "slurm_cluster": "c"})])
    frame = store.read_frame().set_index("run_id")
    assert pd.isna(frame.loc["run-1", "slurm_job_id"])
    assert frame.loc["run-2", ["slurm_job_id", "slurm_cluster"]].tolist() == ["7", "c"]
    store.close()


def test_rows_stored_before_e2e_interactivity_read_it_as_null(store_url: str) -> None:
    engine = create_engine(store_url)
    with engine.begin() as conn:
        migrations.upgrade(conn, "0006")
        old = record(1).model_dump(
            exclude={*E2E_INTVTY_COLUMNS, *PULL_COLUMNS, *DEPLOYMENT_COLUMNS}
        )
        conn.execute(RESULTS.insert(), [old])  # the row as revision 0006 stored it
    engine.dispose()
    store = ResultStore(store_url)
    store.write([record(2)])
    frame = store.read_frame().set_index("run_id")
    assert frame.loc["run-1", list(E2E_INTVTY_COLUMNS)].isna().all()
    assert frame.loc["run-2", "e2e_intvty_median"] == pytest.approx(record(2).e2e_intvty_median)
    store.close()


def test_rows_stored_before_deployments_are_single_node_servers(store_url: str) -> None:
    engine = create_engine(store_url)
    with engine.begin() as conn:
        migrations.upgrade(conn, "0010")
        conn.execute(RESULTS.insert(), [record(1).model_dump(exclude=set(DEPLOYMENT_COLUMNS))])
    engine.dispose()
    store = ResultStore(store_url)
    deployed = {"deployment": "disagg 1P tp4 + 2D tp8", "deployment_gpus": 20, "gpus": 20,
                "disagg": True, "prefill_workers": 1, "decode_workers": 2,
                "router": "sglang-router"}  # fmt: skip
    store.write([record(2).model_copy(update=deployed)])
    frame = store.read_frame().set_index("run_id")
    assert not frame.loc["run-1", "disagg"] and pd.isna(frame.loc["run-1", "deployment"])
    assert frame.loc["run-2", ["deployment", "gpus", "disagg", "router"]].tolist() == [
        "disagg 1P tp4 + 2D tp8", 20, True, "sglang-router",
    ]  # fmt: skip
    store.close()


def test_rows_stored_before_pull_requests_are_official_and_pr_rows_stay_out_of_it(
    store_url: str,
) -> None:
    engine = create_engine(store_url)
    with engine.begin() as conn:
        migrations.upgrade(conn, "0008")
        conn.execute(
            RESULTS.insert(), [record(1).model_dump(exclude={*PULL_COLUMNS, *DEPLOYMENT_COLUMNS})]
        )
    engine.dispose()
    store = ResultStore(store_url)
    pr = {"pr_number": 12, "head_sha": "c0ffee" * 6 + "c0ff"}
    store.write([record(2).model_copy(update=pr), record(3).model_copy(update={"pr_number": 13})])
    assert store.read_frame()["run_id"].tolist() == ["run-1"]  # the default: official only
    only = store.read_frame(ResultFilter(pull_requests="only", pr_numbers=(12,)))
    assert only[["run_id", "pr_number", "head_sha"]].values.tolist() == [
        ["run-2", 12, pr["head_sha"]]
    ]
    every = store.read_frame(ResultFilter(pull_requests="include"))
    assert sorted(every["run_id"]) == ["run-1", "run-2", "run-3"]
    store.close()


def test_same_artifact_twice_is_one_row(store: ResultStore) -> None:
    first = store.write([record(1), record(2)])
    again = store.write([record(1)])
    assert (first.written, first.skipped_existing) == (2, 0)
    assert (again.written, again.skipped_existing) == (0, 1)
    assert store.count() == 2


def test_repeated_artifact_within_one_write_is_stored_once(store: ResultStore) -> None:
    report = store.write([record(1), record(1)])
    assert (report.written, report.skipped_existing) == (1, 1)
    assert store.count() == 1


def test_failure_mid_batch_writes_nothing(store_url: str) -> None:
    store = ResultStore(store_url, batch_rows=2)
    good = [record(i) for i in range(5)]
    # Bypasses validation so the database's own CHECK (conc >= 1) fails in the third batch.
    broken = good[4].model_construct(**{**good[4].model_dump(), "conc": 0})
    with pytest.raises(StoreError, match=r"nothing of this ingest was kept"):
        store.write([*good[:4], broken], [_rejection("q1")])
    assert store.count() == 0
    assert store.quarantine() == []


def test_result_id_held_by_another_artifact_is_quarantined_as_conflict(store: ResultStore) -> None:
    original = record(1)
    store.write([original])
    clash = original.model_copy(update={"artifact_sha256": sha("other bytes")})
    report = store.write([clash])
    assert report.written == 0
    assert [r.code for r in store.quarantine()] == ["conflict"]
    assert "give this run its own run id or attempt" in report.rejections[0].reason


def test_quarantine_lists_each_artifact_once(store: ResultStore) -> None:
    store.write([], [_rejection("bad")])
    store.write([], [_rejection("bad")])
    assert [(r.path, r.code) for r in store.quarantine()] == [("bad.json", "truncated-json")]


def test_the_same_bytes_rejected_at_two_paths_are_two_entries(store: ResultStore) -> None:
    same = sha("torn")
    store.write([], [_rejection("a", artifact=same), _rejection("b", artifact=same)])
    store.write([], [_rejection("a", artifact=same)])
    assert [r.path for r in store.quarantine()] == ["a.json", "b.json"]


def test_quarantine_entries_written_before_revision_0008_stay(store_url: str) -> None:
    engine = create_engine(store_url)
    with engine.begin() as conn:
        migrations.upgrade(conn, "0007")
        old = {**_rejection("old").model_dump(), "rejected_at": datetime.now(UTC)}
        conn.execute(QUARANTINE.insert(), [old])  # the entry as revision 0007 stored it
    engine.dispose()
    store = ResultStore(store_url)
    store.write([], [_rejection("old", artifact=sha("old")), _rejection("new")])
    assert [r.path for r in store.quarantine()] == ["old.json", "new.json"]
    store.close()


def test_storing_a_quarantined_artifact_releases_it(store: ResultStore) -> None:
    # e.g. first ingested without the identity flags it needed, then again with them
    later = record(8)
    store.write([], [_rejection("needs-flags", artifact=later.artifact_sha256)])
    store.write([later])
    assert store.quarantine() == []


def test_read_frame_has_the_record_columns_and_dtypes(store: ResultStore) -> None:
    store.write([record(1)])
    frame = store.read_frame()
    assert tuple(frame.columns) == RECORD_COLUMNS
    row = frame.iloc[0]
    assert frame["dp_attn"].dtype == bool and frame["simulated"].dtype == bool
    assert str(frame["isl"].dtype) == "Int64" and frame["conc"].dtype == "int64"
    assert row["started_at"] == pd.Timestamp(datetime(2026, 1, 1, tzinfo=UTC))
    assert row["tput_per_gpu"] == pytest.approx(1920.0)
    assert row["image_tag"] == "v0.11.0"


def test_read_frame_on_empty_store_has_typed_columns(store: ResultStore) -> None:
    frame = store.read_frame()
    assert len(frame) == 0
    assert tuple(frame.columns) == RECORD_COLUMNS
    assert str(frame["started_at"].dtype).startswith("datetime64")


def test_read_frame_filters(store: ResultStore) -> None:
    store.write(
        [
            record(1, sku="h200"),
            record(2, sku="b200", vendor="nvidia"),
            record(3, sku="mi355x", vendor="amd", framework="sglang"),
        ]
    )
    assert set(store.read_frame(ResultFilter(skus=("h200", "b200")))["sku"]) == {"h200", "b200"}
    amd = store.read_frame(ResultFilter(vendors=("amd",), frameworks=("sglang",)))
    assert list(amd["sku"]) == ["mi355x"]
    assert store.read_frame(ResultFilter(simulated=False)).empty
    late = ResultFilter(since=datetime(2027, 1, 1, tzinfo=UTC))
    assert store.read_frame(late).empty
    early = ResultFilter(until=datetime(2027, 1, 1, tzinfo=UTC), valid_only=True)
    assert len(store.read_frame(early)) == 3


def test_read_frame_subset_of_columns(store: ResultStore) -> None:
    store.write([record(1)])
    frame = store.read_frame(columns=["sku", "tput_per_gpu", "valid"])
    assert list(frame.columns) == ["sku", "tput_per_gpu", "valid"]
    with pytest.raises(StoreError, match=r"unknown columns \['nope'\]"):
        store.read_frame(columns=["nope"])


def test_write_frame_round_trips_a_read_frame(
    store: ResultStore, tmp_path_factory: pytest.TempPathFactory
) -> None:
    store.write([record(1), record(2)])
    frame = store.read_frame()
    other = ResultStore(f"sqlite:///{tmp_path_factory.mktemp('copy') / 'copy.sqlite'}")
    report = other.write_frame(frame)
    assert report.written == 2
    copied = other.read_frame().sort_values("result_id").reset_index(drop=True)
    pd.testing.assert_frame_equal(copied, frame.sort_values("result_id").reset_index(drop=True))


def test_write_frame_rejects_wrong_columns(store: ResultStore) -> None:
    with pytest.raises(StoreError, match=r"missing \['acceptance_mode'"):
        store.write_frame(pd.DataFrame({"sku": ["h200"]}))


def test_unreachable_database_is_a_store_error() -> None:
    url = "postgresql+psycopg2://nobody@127.0.0.1:1/none"
    with pytest.raises(
        StoreError, match=r"^postgresql\+psycopg2://nobody@127.0.0.1:1/none: cannot open"
    ):
        ResultStore(url)


def _rejection(name: str, artifact: str | None = None) -> Rejection:
    return Rejection(
        path=f"{name}.json",
        artifact_sha256=artifact or sha(name),
        code="truncated-json",
        reason="not complete JSON",
        size_bytes=3,
    )


def test_sqlite_in_memory_store_is_shared_across_connections() -> None:
    store = ResultStore("sqlite://")
    store.write([record(1)])
    assert store.count() == 1
    assert len(store.read_frame()) == 1
