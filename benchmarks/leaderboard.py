"""Leaderboard at scale: 1,000,000 synthetic rows into SQLite, then fronts and the site.

Prints time and peak memory per phase and the ratio to each target (ingest >= 50,000
rows/s, whole build < 30 s, peak RSS < 2 GB). Ratios >= 1.0 meet the target. Run:

    .venv/bin/python benchmarks/leaderboard.py [--rows N] [--images N] [--dir DIR]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from inferx_pipeline.catalog import load_catalog
from inferx_pipeline.leaderboard.board import compute_leaderboard
from inferx_pipeline.leaderboard.build import write_site
from inferx_pipeline.leaderboard.config import STATS, load_leaderboard_config
from inferx_pipeline.leaderboard.frame import LEADERBOARD_COLUMNS, current, prepare
from inferx_pipeline.leaderboard.pareto import pareto_front
from inferx_pipeline.leaderboard.synthetic import ROWS_PER_RECIPE_IMAGE, synthetic_frame
from inferx_pipeline.results.store import ResultStore

ROOT = Path(__file__).resolve().parents[1]
INGEST_TARGET_ROWS_S = 50_000.0
BUILD_TARGET_S = 30.0
MEMORY_TARGET_MB = 2048.0
CHUNK_ROWS = 100_000  # generated and written per step, so generation never holds 1M rows


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def _ingest(url: str, rows: int, images: int) -> tuple[int, float]:
    catalog = load_catalog(ROOT / "catalog")
    store = ResultStore(url)
    written, spent = 0, 0.0
    per_chunk = max(1, CHUNK_ROWS // (ROWS_PER_RECIPE_IMAGE * images))
    seed = 0
    try:
        while written < rows:
            chunk = synthetic_frame(
                catalog, per_chunk * ROWS_PER_RECIPE_IMAGE * images, images, seed
            )
            # Each chunk is a distinct set of recipes with its own ids.
            chunk["recipe_id"] = chunk["recipe_id"] + f"-s{seed}"
            for column in ("result_id", "artifact_sha256"):
                chunk[column] = [f"{seed:08x}{v[8:]}" for v in chunk[column]]
            chunk = chunk.iloc[: rows - written]
            start = time.perf_counter()
            written += store.write_frame(chunk).written
            spent += time.perf_counter() - start
            seed += 1
    finally:
        store.close()
    return written, spent


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

    written, ingest_s = _ingest(url, args.rows, args.images)
    rate = written / ingest_s
    print(f"ingest: {written:,} rows in {ingest_s:.1f} s = {rate:,.0f} rows/s "
          f"(target {INGEST_TARGET_ROWS_S:,.0f}: ratio {rate / INGEST_TARGET_ROWS_S:.2f}); "
          f"peak RSS so far {_peak_mb():,.0f} MB")  # fmt: skip

    t0 = time.perf_counter()
    store = ResultStore(url)
    try:
        frame = store.read_frame(columns=LEADERBOARD_COLUMNS)
    finally:
        store.close()
    t_read = time.perf_counter()
    shown = current(prepare(frame))
    for stat in STATS:
        pareto_front(shown, stat)
    t_front = time.perf_counter()
    board = compute_leaderboard(frame, catalog, config)
    t_board = time.perf_counter()
    manifest = write_site(board, work / "site", catalog, config, datetime.now(UTC))
    t_site = time.perf_counter()
    total = t_site - t0
    size_mb = sum(p.stat().st_size for p in (work / "site").rglob("*") if p.is_file()) / 1e6
    print(f"read {len(frame):,} rows from SQLite: {t_read - t0:.1f} s")
    print(f"fronts (4 statistics, current rows): {t_front - t_read:.2f} s")
    print(f"all computations (fronts, tiers, costs, rankings, history, regressions): "
          f"{t_board - t_front:.1f} s")  # fmt: skip
    print(f"site written: {t_site - t_board:.1f} s, {manifest.counts['pages']} pages, "
          f"{size_mb:.0f} MB, counts {manifest.counts}")  # fmt: skip
    print(f"whole build (read + compute + write): {total:.1f} s "
          f"(target < {BUILD_TARGET_S:.0f} s: ratio {BUILD_TARGET_S / total:.2f})")  # fmt: skip
    peak = _peak_mb()
    print(f"peak RSS: {peak:,.0f} MB (target < {MEMORY_TARGET_MB:,.0f} MB: "
          f"ratio {MEMORY_TARGET_MB / peak:.2f})")  # fmt: skip
    print(f"work directory: {work}")


if __name__ == "__main__":
    main()
