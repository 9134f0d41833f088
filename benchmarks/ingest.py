"""Ingest and read throughput of the results store (SQLite file), against a raw sqlite3 baseline.

    .venv/bin/python benchmarks/ingest.py [--rows 200000] [--records 20000]

Prints rows/s for: raw ``sqlite3.executemany`` of the same values into the same schema
(the baseline, measured in this run), ``ResultStore.write_frame`` (the bulk path: target
>= 50,000 rows/s), ``ResultStore.write`` from validated ``ResultRecord`` objects, a
repeated write of the same rows (all skipped: the idempotency probe), and ``read_frame``
(all columns and a leaderboard-sized subset). Timings never gate tests; read the ratios.
"""

from __future__ import annotations

import argparse
import hashlib
import resource
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from inferx_pipeline.results.frames import to_tuples
from inferx_pipeline.results.normalize import normalize
from inferx_pipeline.results.record import RECORD_COLUMNS, JobIdentity, ResultRecord, RunContext
from inferx_pipeline.results.store import ResultStore

LEADERBOARD_SUBSET = ["model", "sku", "framework", "precision", "spec_method", "scenario", "conc"]
LEADERBOARD_SUBSET += ["tput_per_gpu", "intvty_median", "ttft_median_s", "valid", "image_tag"]


def _record() -> ResultRecord:
    payload = {
        "duration": 10.0, "completed": 100, "failed": 0, "total_input_tokens": 102_400,
        "total_output_tokens": 51_200, "request_throughput": 10.0, "output_throughput": 5120.0,
        "total_token_throughput": 15_360.0, "mean_ttft_ms": 200.0, "median_ttft_ms": 180.0,
        "mean_tpot_ms": 20.0, "median_tpot_ms": 25.0, "p99_tpot_ms": 50.0,
        "date": "20260101-000000",
    }  # fmt: skip
    identity = JobIdentity(
        recipe_id="dsr1-fp8-h200-vllm", fingerprint="f" * 64, job_id="j", model="m",
        model_family="dsr1", precision="fp8", sku="h200", vendor="nvidia", framework="vllm",
        image="vllm/vllm-openai:v1", scenario="fixed-seq-len", isl=1024, osl=1024, tp=8, conc=1,
    )  # fmt: skip
    run = RunContext(run_id="bench", simulated=True)
    return normalize(payload, identity, run, artifact_sha256="0" * 64, source="inferx")


def synthetic_frame(rows: int) -> pd.DataFrame:
    """``rows`` distinct records (unique ids and hashes), varied conc/SKU/throughput."""
    base = pd.DataFrame([_record().model_dump()] * rows, columns=list(RECORD_COLUMNS))
    ids = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(rows)]
    rng = np.random.default_rng(0)
    base["result_id"] = ids
    base["artifact_sha256"] = [h[::-1] for h in ids]
    base["conc"] = rng.choice([1, 2, 4, 8, 16, 32, 64, 128, 256], size=rows)
    base["sku"] = rng.choice(["h100", "h200", "b200", "mi355x"], size=rows)
    base["tput_per_gpu"] = rng.uniform(10, 5000, size=rows)
    base["started_at"] = pd.to_datetime(base["started_at"], utc=True)
    base["finished_at"] = pd.to_datetime(base["finished_at"], utc=True)
    return base


def _timed(label: str, rows: int, action: Callable[[], object]) -> float:
    """Run ``action``; print wall and CPU seconds and rows/s; return CPU rows/s.

    CPU time is the fairer number on a shared 2-core machine; wall time is what a
    person waits.
    """
    start, cpu = time.perf_counter(), time.process_time()
    action()
    elapsed, cpu_s = time.perf_counter() - start, time.process_time() - cpu
    print(
        f"{label:<44} {rows:>9,} rows  wall {elapsed:7.2f} s {rows / elapsed:>10,.0f}/s"
        f"  cpu {cpu_s:7.2f} s {rows / cpu_s:>10,.0f}/s"
    )
    return rows / cpu_s


def _baseline(path: Path, frame: pd.DataFrame) -> Callable[[], None]:
    ResultStore(f"sqlite:///{path}").close()  # the same schema and indexes, via migrations
    # The values SQLAlchemy would bind: datetimes as SQLite's ISO text.
    rows = [
        tuple(v.isoformat(sep=" ") if hasattr(v, "isoformat") else v for v in row)
        for row in to_tuples(frame)
    ]
    sql = f"INSERT INTO results VALUES ({', '.join('?' * len(RECORD_COLUMNS))})"

    def run() -> None:
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA cache_size=-262144")
        with conn:
            conn.executemany(sql, rows)
        conn.close()

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--records", type=int, default=20_000)
    args = parser.parse_args()
    frame = synthetic_frame(args.rows)
    with tempfile.TemporaryDirectory(prefix="inferx-bench-") as tmp:
        root = Path(tmp)
        baseline = _timed(
            "sqlite3.executemany (baseline)", args.rows, _baseline(root / "b.db", frame)
        )
        store = ResultStore(f"sqlite:///{root / 'store.db'}")
        bulk = _timed("ResultStore.write_frame", args.rows, lambda: store.write_frame(frame))
        _timed(
            "ResultStore.write_frame again (all skipped)",
            args.rows,
            lambda: store.write_frame(frame),
        )
        _timed("ResultStore.read_frame (all columns)", args.rows, store.read_frame)
        subset = LEADERBOARD_SUBSET
        _timed(
            "ResultStore.read_frame (12 columns)",
            args.rows,
            lambda: store.read_frame(columns=subset),
        )
        head = to_tuples(frame.head(args.records))
        records = [ResultRecord(**dict(zip(RECORD_COLUMNS, row, strict=True))) for row in head]
        other = ResultStore(f"sqlite:///{root / 'records.db'}")
        _timed(
            "ResultStore.write (ResultRecord objects)", len(records), lambda: other.write(records)
        )
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"write_frame / baseline (cpu rows/s): {bulk / baseline:.2f}x   target 50,000 rows/s: "
          f"{'met' if bulk >= 50_000 else 'NOT met'}   peak RSS {peak_mb:,.0f} MB")  # fmt: skip


if __name__ == "__main__":
    main()
