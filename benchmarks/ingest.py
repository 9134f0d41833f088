"""Ingest throughput of the results store against the raw driver, on SQLite and PostgreSQL.

    .venv/bin/python benchmarks/ingest.py [--rows 100000] [--repeat 3] [--records 20000]
        [--postgres-url postgresql+psycopg2://USER@HOST:PORT/DB | --no-postgres]

For each database one run writes the same ``--rows`` distinct rows, each time into a
fresh migrated, empty schema (the store's tables and indexes) in one transaction:

- ``executemany (baseline)``: raw DB-API ``executemany`` (``sqlite3``; ``psycopg2``, the
  store's PostgreSQL driver) of the rows as native Python values (None, bool, datetime;
  SQLite gets datetimes as the text the store writes). The rows are built before the clock.
- ``ResultStore.write_frame``: the DataFrame into an empty store; the clock includes the
  frame's conversion. Target: >= 0.95 x the baseline's rows/s.
- beside, not a target: on SQLite ``executemany`` of the rows already in the store's bind
  form (NULL as NaN, booleans as 0/1: no adapter lookups), the driver's own best; on
  PostgreSQL ``COPY ... FROM STDIN`` (CSV written from the same rows inside the clock),
  PostgreSQL's ceiling.

Each of these runs ``--repeat`` times, interleaved, and the best wall time counts; rows/s
and ratios are wall-clock (PostgreSQL's work happens in its server, outside this process's
CPU time, which is printed beside). Then, once each: a repeated ``write_frame`` of the same
rows (all skipped: the idempotency check), ``read_frame`` (all columns, then 12) and
``ResultStore.write`` of ``--records`` validated ``ResultRecord`` objects. Timings never gate
tests; read the ratio lines at the end.

PostgreSQL: with ``--postgres-url`` each measurement gets its own schema in that database,
created and dropped by the run (nothing else there is touched). Without it the run starts a
throwaway cluster (Debian's ``initdb``/``pg_ctl`` from /usr/lib/postgresql/*/bin, in a temp
dir, on a free loopback port, as ``nobody`` when run as root since initdb refuses root,
fsync off like the test fixture's) and stops and deletes it at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import hashlib
import io
import os
import pwd
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import psycopg2
from sqlalchemy.engine import URL, make_url

from inferx_pipeline.results.frames import bind_rows, to_tuples
from inferx_pipeline.results.normalize import normalize
from inferx_pipeline.results.record import RECORD_COLUMNS, JobIdentity, ResultRecord, RunContext
from inferx_pipeline.results.store import ResultStore

TARGET = 0.95  # write_frame rows/s over the baseline's
LEADERBOARD_SUBSET = ["model", "sku", "framework", "precision", "spec_method", "scenario", "conc"]
LEADERBOARD_SUBSET += ["tput_per_gpu", "intvty_median", "ttft_median_s", "valid", "image_tag"]
INSERT = (
    f"INSERT INTO results ({', '.join(RECORD_COLUMNS)}) "
    f"VALUES ({', '.join(['{mark}'] * len(RECORD_COLUMNS))})"
)
PG_BINARIES = "/usr/lib/postgresql/*/bin"
PG_USER = "inferx"
UNPRIVILEGED_USER = "nobody"

Row = tuple[Any, ...]
Timing = tuple[float, float]  # wall and CPU seconds
Target = Callable[[], contextlib.AbstractContextManager[str]]  # a fresh, migrated store URL


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
    """``rows`` distinct records (unique ids and hashes), varied conc/SKU/throughput/time."""
    base = pd.DataFrame([_record().model_dump()] * rows, columns=list(RECORD_COLUMNS))
    ids = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(rows)]
    rng = np.random.default_rng(0)
    base["result_id"] = ids
    base["artifact_sha256"] = [h[::-1] for h in ids]
    base["conc"] = rng.choice([1, 2, 4, 8, 16, 32, 64, 128, 256], size=rows)
    base["sku"] = rng.choice(["h100", "h200", "b200", "mi355x"], size=rows)
    base["tput_per_gpu"] = rng.uniform(10, 5000, size=rows)
    offsets = pd.to_timedelta(rng.integers(0, 10**12, size=rows), unit="us")
    base["started_at"] = pd.to_datetime(base["started_at"], utc=True) + offsets
    base["finished_at"] = base["started_at"] + pd.Timedelta(seconds=10)
    return base


def _clock(action: Callable[[], object]) -> Timing:
    start, cpu = time.perf_counter(), time.process_time()
    action()
    return time.perf_counter() - start, time.process_time() - cpu


# --- SQLite -------------------------------------------------------------------------------


def _sqlite_target(root: Path) -> Target:
    @contextlib.contextmanager
    def fresh() -> Iterator[str]:
        path = root / f"{uuid.uuid4().hex}.sqlite"
        url = f"sqlite:///{path}"
        ResultStore(url).close()  # the store's schema and indexes, via its migrations
        try:
            yield url
        finally:
            for leftover in root.glob(f"{path.name}*"):
                leftover.unlink()

    return fresh


def _sqlite_executemany(rows: list[Row]) -> Callable[[str], Timing]:
    sql = INSERT.replace("{mark}", "?")

    def run(url: str) -> Timing:
        conn = sqlite3.connect(str(make_url(url).database))
        # The store's own pragmas (see store._sqlite_engine), so both write alike.
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "cache_size=-262144"):
            conn.execute(f"PRAGMA {pragma}")
        try:
            return _clock(lambda: _commit_executemany(conn, sql, rows))
        finally:
            conn.close()

    return run


def _commit_executemany(conn: Any, sql: str, rows: list[Row]) -> None:
    with conn:
        conn.cursor().executemany(sql, rows)


def _sqlite_native(rows: list[Row]) -> list[Row]:
    """Native rows as SQLite takes them: datetimes as the text the store writes."""
    return [
        tuple(v.strftime("%Y-%m-%d %H:%M:%S.%f") if isinstance(v, datetime) else v for v in row)
        for row in rows
    ]


# --- PostgreSQL -----------------------------------------------------------------------------


def _dsn(url: URL) -> str:
    """The libpq URI psycopg2 connects with, from a SQLAlchemy URL."""
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def _postgres_target(base: URL) -> Target:
    @contextlib.contextmanager
    def fresh() -> Iterator[str]:
        schema = f"bench_{uuid.uuid4().hex[:12]}"
        admin = psycopg2.connect(_dsn(base))
        admin.autocommit = True
        try:
            with admin.cursor() as cur:
                cur.execute(f"CREATE SCHEMA {schema}")
            url = base.update_query_dict({"options": f"-csearch_path={schema}"})
            text = url.render_as_string(hide_password=False)
            ResultStore(text).close()
            yield text
        finally:
            with admin.cursor() as cur:
                cur.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            admin.close()

    return fresh


def _postgres_executemany(rows: list[Row]) -> Callable[[str], Timing]:
    sql = INSERT.replace("{mark}", "%s")

    def run(url: str) -> Timing:
        conn = psycopg2.connect(_dsn(make_url(url)))
        try:
            return _clock(lambda: _commit_executemany(conn, sql, rows))
        finally:
            conn.close()

    return run


def _postgres_copy(rows: list[Row]) -> Callable[[str], Timing]:
    sql = f"COPY results ({', '.join(RECORD_COLUMNS)}) FROM STDIN WITH (FORMAT csv, NULL '\\N')"

    def copy(conn: Any) -> None:
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        writer.writerows(tuple("\\N" if v is None else v for v in row) for row in rows)
        text.seek(0)
        with conn, conn.cursor() as cur:
            cur.copy_expert(sql, text)

    def run(url: str) -> Timing:
        conn = psycopg2.connect(_dsn(make_url(url)))
        try:
            return _clock(lambda: copy(conn))
        finally:
            conn.close()

    return run


def _pg_bin(name: str) -> str:
    found = sorted(Path("/").glob(f"{PG_BINARIES.lstrip('/')}/{name}"))
    if not found:
        raise SystemExit(f"no {PG_BINARIES}/{name}: install postgresql (scripts/system-deps)")
    return str(found[-1])


def _as_unprivileged() -> dict[str, Any]:
    """subprocess kwargs that drop root to ``nobody`` (initdb refuses root)."""
    if os.geteuid() != 0:
        return {}
    entry = pwd.getpwnam(UNPRIVILEGED_USER)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[URL]:
    """A private cluster on loopback for this run; stopped and deleted afterwards."""
    root = Path(tempfile.mkdtemp(prefix="inferx-bench-pg-"))
    data, log = root / "data", root / "postgres.log"
    if os.geteuid() == 0:
        entry = pwd.getpwnam(UNPRIVILEGED_USER)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    port = _free_port()
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
    initdb = [_pg_bin("initdb"), "-D", str(data), "-U", PG_USER, "--auth=trust", "-E", "UTF8"]
    pg_ctl = _pg_bin("pg_ctl")
    try:
        subprocess.run(
            [*initdb, "--no-sync"], check=True, capture_output=True, **_as_unprivileged()
        )
        start = [pg_ctl, "-D", str(data), "-o", options, "-l", str(log), "-w", "start"]
        subprocess.run(start, check=True, capture_output=True, **_as_unprivileged())
        try:
            yield make_url(f"postgresql+psycopg2://{PG_USER}@127.0.0.1:{port}/postgres")
        finally:
            stop = [pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"]
            subprocess.run(stop, check=False, capture_output=True, **_as_unprivileged())
    finally:
        shutil.rmtree(root, ignore_errors=True)


# --- the run --------------------------------------------------------------------------------


def _write_frame(frame: pd.DataFrame) -> Callable[[str], Timing]:
    def run(url: str) -> Timing:
        store = ResultStore(url)
        try:
            timing = _clock(lambda: store.write_frame(frame))
            if store.count() != len(frame):
                raise SystemExit(f"write_frame stored {store.count()} rows, not {len(frame)}")
            return timing
        finally:
            store.close()

    return run


def _line(label: str, rows: int, timing: Timing) -> None:
    wall, cpu = timing
    print(f"  {label:<46} {rows:>9,} rows  wall {wall:6.2f} s {rows / wall:>9,.0f} rows/s"
          f"  (this process's cpu {cpu:6.2f} s)")  # fmt: skip


def _measure(
    name: str,
    fresh: Target,
    methods: dict[str, Callable[[str], Timing]],
    rows: int,
    repeat: int,
) -> dict[str, Timing]:
    """Best (lowest wall) timing of each method over ``repeat`` interleaved rounds."""
    best: dict[str, Timing] = {}
    for _ in range(repeat):
        for label, method in methods.items():
            with fresh() as url:
                timing = method(url)
            if label not in best or timing[0] < best[label][0]:
                best[label] = timing
    print(f"{name}: best of {repeat}, each into a fresh empty schema")
    for label, timing in best.items():
        _line(label, rows, timing)
    return best


def _after(fresh: Target, frame: pd.DataFrame, records: list[ResultRecord]) -> None:
    """Once each: a repeated write (all skipped), reads, and writes of ResultRecords."""
    rows = len(frame)
    with fresh() as url:
        store = ResultStore(url)
        store.write_frame(frame)
        _line("write_frame again (all skipped)", rows, _clock(lambda: store.write_frame(frame)))
        _line("read_frame (all columns)", rows, _clock(store.read_frame))
        subset = _clock(lambda: store.read_frame(columns=LEADERBOARD_SUBSET))
        _line("read_frame (12 columns)", rows, subset)
        store.close()
    with fresh() as url:
        store = ResultStore(url)
        _line("write (ResultRecord objects)", len(records), _clock(lambda: store.write(records)))
        store.close()


def _verdict(name: str, best: dict[str, Timing], beside: str) -> str:
    ratio = best["executemany (baseline)"][0] / best["ResultStore.write_frame"][0]
    other = best["executemany (baseline)"][0] / best[beside][0]
    verdict = "met" if ratio >= TARGET else "NOT met"
    return (
        f"{name}: write_frame / executemany = {ratio:.2f} (target >= {TARGET}: {verdict}); "
        f"{beside} / executemany = {other:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--postgres-url", type=make_url, default=None)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    frame = synthetic_frame(args.rows)
    native = to_tuples(frame)
    head = native[: args.records]
    records = [ResultRecord(**dict(zip(RECORD_COLUMNS, row, strict=True))) for row in head]
    verdicts = []
    with tempfile.TemporaryDirectory(prefix="inferx-bench-") as tmp:
        fresh = _sqlite_target(Path(tmp))
        tuned = "executemany of the store's bind form"
        sqlite_methods = {
            "executemany (baseline)": _sqlite_executemany(_sqlite_native(native)),
            "ResultStore.write_frame": _write_frame(frame),
            tuned: _sqlite_executemany(list(bind_rows(frame))),
        }
        best = _measure("SQLite", fresh, sqlite_methods, args.rows, args.repeat)
        verdicts.append(_verdict("SQLite", best, tuned))
        _after(fresh, frame, records)
    if not args.no_postgres:
        with contextlib.ExitStack() as stack:
            base = args.postgres_url or stack.enter_context(throwaway_postgres())
            if base.drivername == "postgresql":  # SQLAlchemy would pick psycopg 3
                base = base.set(drivername="postgresql+psycopg2")
            fresh = _postgres_target(base)
            pg_methods = {
                "executemany (baseline)": _postgres_executemany(native),
                "ResultStore.write_frame": _write_frame(frame),
                "COPY FROM STDIN (ceiling)": _postgres_copy(native),
            }
            best = _measure("PostgreSQL", fresh, pg_methods, args.rows, args.repeat)
            verdicts.append(_verdict("PostgreSQL", best, "COPY FROM STDIN (ceiling)"))
            _after(fresh, frame, records)
    print("\n".join(verdicts))


if __name__ == "__main__":
    main()
