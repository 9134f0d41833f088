"""Leaderboard at scale: 1,000,000 synthetic rows into SQLite, then fronts and the site.

Prints time (wall and CPU) and peak memory per phase and the ratio to each target (ingest
>= 50,000 rows/s, whole build < 30 s, peak RSS < 2 GB; ratios >= 1.0 meet it), plus a
baseline measured in the same run: raw ``sqlite3.executemany`` of the first chunk's rows
into the same schema. The build reads the store as ``inferx leaderboard build`` does
(``leaderboard.source``: history columns of every row, all columns of the newest images).

    .venv/bin/python benchmarks/leaderboard.py [--rows N] [--images N] [--dir DIR]
"""

from __future__ import annotations

import argparse
import resource
import sqlite3
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from inferx_pipeline.catalog import Catalog, load_catalog
from inferx_pipeline.leaderboard.board import compute_leaderboard
from inferx_pipeline.leaderboard.build import write_site
from inferx_pipeline.leaderboard.config import STATS, load_leaderboard_config
from inferx_pipeline.leaderboard.frame import current, prepare
from inferx_pipeline.leaderboard.pareto import pareto_front
from inferx_pipeline.leaderboard.source import read_board_frames
from inferx_pipeline.leaderboard.synthetic import ROWS_PER_RECIPE_IMAGE, synthetic_frame
from inferx_pipeline.results.frames import to_tuples
from inferx_pipeline.results.record import RECORD_COLUMNS
from inferx_pipeline.results.store import ResultStore

ROOT = Path(__file__).resolve().parents[1]
INGEST_TARGET_ROWS_S = 50_000.0
BUILD_TARGET_S = 30.0
MEMORY_TARGET_MB = 2048.0
CHUNK_ROWS = 100_000  # generated and written per step, so generation never holds 1M rows


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


class Clock:
    """Wall and CPU seconds since the last ``lap``."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def lap(self) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        spent = (wall - self.wall, cpu - self.cpu)
        self.wall, self.cpu = wall, cpu
        return spent


def _chunk(catalog: Catalog, seed: int, rows: int, images: int) -> pd.DataFrame:
    per_chunk = max(1, CHUNK_ROWS // (ROWS_PER_RECIPE_IMAGE * images))
    chunk = synthetic_frame(catalog, per_chunk * ROWS_PER_RECIPE_IMAGE * images, images, seed)
    # Each chunk is a distinct set of recipes with its own ids.
    chunk["recipe_id"] = chunk["recipe_id"] + f"-s{seed}"
    for column in ("result_id", "artifact_sha256"):
        chunk[column] = [f"{seed:08x}{v[8:]}" for v in chunk[column]]
    return chunk.iloc[:rows]


def _ingest(url: str, rows: int, images: int) -> tuple[int, float, float, float]:
    """Write ``rows`` rows chunk by chunk; returns rows written, wall and CPU seconds, and
    the first chunk's rows/s (into the empty table, like the baseline)."""
    catalog = load_catalog(ROOT / "catalog")
    store = ResultStore(url)
    written, wall, cpu, seed, first = 0, 0.0, 0.0, 0, 0.0
    try:
        while written < rows:
            chunk = _chunk(catalog, seed, rows - written, images)
            clock = Clock()
            added = store.write_frame(chunk).written
            spent = clock.lap()
            first = first or added / spent[0]
            written += added
            wall, cpu, seed = wall + spent[0], cpu + spent[1], seed + 1
    finally:
        store.close()
    return written, wall, cpu, first


def _baseline(path: Path, images: int) -> tuple[int, float, float]:
    """Raw ``sqlite3.executemany`` of the first chunk into the same (empty) schema, one
    transaction; returns rows, wall and CPU seconds."""
    frame = _chunk(load_catalog(ROOT / "catalog"), 0, CHUNK_ROWS, images)
    ResultStore(f"sqlite:///{path}").close()  # the same tables and indexes, via migrations
    rows = [
        tuple(v.isoformat(sep=" ") if hasattr(v, "isoformat") else v for v in row)
        for row in to_tuples(frame)
    ]
    sql = f"INSERT INTO results VALUES ({', '.join('?' * len(RECORD_COLUMNS))})"
    conn = sqlite3.connect(path)
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "cache_size=-262144"):
        conn.execute(f"PRAGMA {pragma}")
    clock = Clock()
    with conn:
        conn.executemany(sql, rows)
    wall, cpu = clock.lap()
    conn.close()
    return len(rows), wall, cpu


def _rates(label: str, rows: int, wall: float, cpu: float) -> float:
    print(f"{label}: {rows:,} rows, wall {wall:.1f} s = {rows / wall:,.0f} rows/s, "
          f"cpu {cpu:.1f} s = {rows / cpu:,.0f} rows/s")  # fmt: skip
    return rows / wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--images", type=int, default=50)
    parser.add_argument("--dir", type=Path, default=None, help="Work directory (default: temp).")
    args = parser.parse_args()
    work = args.dir or Path(tempfile.mkdtemp(prefix="inferx-leaderboard-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{work / 'results.sqlite'}"
    catalog = load_catalog(ROOT / "catalog")
    config = load_leaderboard_config(ROOT / "catalog")

    base_rate = _rates(
        "baseline raw sqlite3.executemany", *_baseline(work / "raw.sqlite", args.images)
    )
    written, wall, cpu, first = _ingest(url, args.rows, args.images)
    rate = _rates("ingest (ResultStore.write_frame)", written, wall, cpu)
    print(f"ingest vs target {INGEST_TARGET_ROWS_S:,.0f} rows/s: ratio "
          f"{rate / INGEST_TARGET_ROWS_S:.2f}; first chunk vs baseline (wall, "
          f"both into an empty table): {first / base_rate:.2f}x; "
          f"peak RSS so far {_peak_mb():,.0f} MB")  # fmt: skip

    clock = Clock()
    store = ResultStore(url)
    try:
        history, latest = read_board_frames(store, config)
    finally:
        store.close()
    read_s = clock.lap()
    print(f"read: {len(history):,} history rows + {len(latest):,} newest-image rows, "
          f"wall {read_s[0]:.1f} s, cpu {read_s[1]:.1f} s; "
          f"peak RSS {_peak_mb():,.0f} MB")  # fmt: skip
    shown = current(prepare(latest))
    for stat in STATS:
        pareto_front(shown, stat)
    front_s = clock.lap()
    print(f"fronts (4 statistics, current rows): wall {front_s[0]:.2f} s")
    board = compute_leaderboard(history, catalog, config, latest)
    board_s = clock.lap()
    print(f"all computations (fronts, tiers, costs, rankings, history, regressions): "
          f"wall {board_s[0]:.1f} s, cpu {board_s[1]:.1f} s; "
          f"peak RSS {_peak_mb():,.0f} MB")  # fmt: skip
    manifest = write_site(board, work / "site", catalog, config, datetime.now(UTC))
    site_s = clock.lap()
    total = read_s[0] + front_s[0] + board_s[0] + site_s[0]
    size_mb = sum(p.stat().st_size for p in (work / "site").rglob("*") if p.is_file()) / 1e6
    print(f"site written: wall {site_s[0]:.1f} s, {manifest.counts['pages']} pages, "
          f"{size_mb:.0f} MB, counts {manifest.counts}")  # fmt: skip
    print(f"whole build (read + compute + write): {total:.1f} s "
          f"(target < {BUILD_TARGET_S:.0f} s: ratio {BUILD_TARGET_S / total:.2f})")  # fmt: skip
    peak = _peak_mb()
    print(f"peak RSS: {peak:,.0f} MB (target < {MEMORY_TARGET_MB:,.0f} MB: "
          f"ratio {MEMORY_TARGET_MB / peak:.2f})")  # fmt: skip
    print(f"work directory: {work}")


if __name__ == "__main__":
    main()
