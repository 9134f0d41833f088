"""Leaderboard at scale: 1,000,000 synthetic rows into SQLite, then fronts and the site.

Prints time (wall and CPU) per phase and the ratio to each target, plus a baseline
measured in the same run: raw ``sqlite3.executemany`` of the first chunk's rows into the
same schema. Targets: ingest >= 50,000 rows/s; the whole build (read + compute + write)
< 10 s wall; the build's peak RSS < 1024 MB. Build ratios are target / measured, so a
ratio >= 1.0 meets the target (the summary says ``met`` or ``NOT met``).

The build runs in a fresh child process, as ``inferx leaderboard build`` is its own
process: the ingest's memory (several hundred MB of generated frames) would otherwise
inflate the peak. It reads the store as ``inferx leaderboard build`` does
(``source.read_site_inputs``: history columns of every row, all columns of the newest
images, eval scores, unofficial runs), then computes the board and writes the site
(``build.build_site``), whose two halves run side by side from 200,000 rows on: the
history half in the build process, the current half in a worker process. The same
build in one process (``side_by_side=False``, a fresh process too) is the baseline,
printed as the side-by-side build's speed-up over it. The four-statistic fronts are then
timed alone, outside the build's total.

Memory: the target is the peak of the build's processes together, sampled every 20 ms
(the build process, its SQLite reader process during the read, its worker during the
build); the build process's own peak (``VmHWM``) and the reader's are printed beside it.

    .venv/bin/python benchmarks/leaderboard.py [--rows N] [--images N] [--dir DIR] [--reuse]

``--reuse`` skips the baseline and the ingest when ``DIR/results.sqlite`` already holds
exactly ``--rows`` rows (from an earlier run with the same ``--dir``), to time the build
alone.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import resource
import shutil
import sqlite3
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import psutil

from inferx_pipeline.catalog import Catalog, load_catalog
from inferx_pipeline.leaderboard.build import build_site
from inferx_pipeline.leaderboard.config import STATS, load_leaderboard_config
from inferx_pipeline.leaderboard.frame import current, prepare
from inferx_pipeline.leaderboard.pareto import pareto_front
from inferx_pipeline.leaderboard.source import read_site_inputs
from inferx_pipeline.leaderboard.synthetic import ROWS_PER_RECIPE_IMAGE, synthetic_frame
from inferx_pipeline.results.frames import to_tuples
from inferx_pipeline.results.record import RECORD_COLUMNS
from inferx_pipeline.results.store import ResultStore

ROOT = Path(__file__).resolve().parents[1]
INGEST_TARGET_ROWS_S = 50_000.0
BUILD_TARGET_S = 10.0
MEMORY_TARGET_MB = 1024.0
CHUNK_ROWS = 100_000  # generated and written per step, so generation never holds 1M rows


def _peak_mb() -> float:
    """This process's peak RSS (``VmHWM``): its own image's, unlike ``ru_maxrss``, which
    Linux carries over from the parent through fork and exec (the ingest's, here)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0  # kB
    raise SystemExit("/proc/self/status has no VmHWM: this benchmark reads Linux's")


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
    # Named columns: migrations appended columns, so the table's order is not RECORD_COLUMNS.
    marks = ", ".join("?" * len(RECORD_COLUMNS))
    sql = f"INSERT INTO results ({', '.join(RECORD_COLUMNS)}) VALUES ({marks})"
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


class TreeMemory:
    """Peak of the summed RSS of this process and its descendants, sampled every 20 ms by
    a thread (a peak shorter than that can be missed)."""

    def __init__(self) -> None:
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(0.02):
            total = 0
            for process in [me, *me.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):  # ended while we looked
                    total += process.memory_info().rss
            self.peak_mb = max(self.peak_mb, total / 2**20)


@dataclass(frozen=True)
class BuildTimes:
    """What the build child measured: wall and CPU seconds per phase, peak RSS, sizes."""

    read: tuple[float, float]
    build: tuple[float, float]  # compute + write, the two halves side by side (or not)
    fronts_s: float
    history_rows: int
    latest_rows: int
    peak_mb: tuple[float, float]  # this process, after the read and after the build
    reader_mb: float  # the SQLite reader child's peak (sqlite_arrow), 0 if none ran
    tree_mb: float  # the sampled peak of this process and its children together
    pages: int
    site_mb: float
    counts: dict[str, int]


def _build(url: str, site: Path, side_by_side: bool) -> BuildTimes:
    """The build as ``inferx leaderboard build`` does it (run in a fresh child process)."""
    catalog = load_catalog(ROOT / "catalog")
    config = load_leaderboard_config(ROOT / "catalog")
    with TreeMemory() as tree:
        clock = Clock()
        store = ResultStore(url)
        try:
            inputs = read_site_inputs(store, config)
        finally:
            store.close()  # ends the reader child: its peak is then in RUSAGE_CHILDREN
        read, read_mb = clock.lap(), _peak_mb()
        reader_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
        history, latest = inputs.history, inputs.latest
        manifest = build_site(
            history, site, catalog, config, datetime.now(UTC), latest, inputs.accuracy,
            inputs.unofficial, side_by_side=side_by_side,
        )  # fmt: skip
        build, build_mb = clock.lap(), _peak_mb()
    shown = current(prepare(latest))
    for stat in STATS:
        pareto_front(shown, stat)
    fronts_s = clock.lap()[0]
    return BuildTimes(
        read=read, build=build, fronts_s=fronts_s,
        history_rows=len(history), latest_rows=len(latest),
        peak_mb=(read_mb, build_mb), reader_mb=reader_mb, tree_mb=tree.peak_mb,
        pages=manifest.counts["pages"],
        site_mb=sum(p.stat().st_size for p in site.rglob("*") if p.is_file()) / 1e6,
        counts=manifest.counts,
    )  # fmt: skip


def _verdict(ratio: float) -> str:
    return "met" if ratio >= 1.0 else "NOT met"


def _ingest_or_reuse(work: Path, url: str, rows: int, images: int, reuse: bool) -> None:
    """Baseline and ingest, or (``reuse``) check that the store already holds ``rows``."""
    if reuse and (work / "results.sqlite").is_file():
        store = ResultStore(url)
        try:
            held = store.count()
        finally:
            store.close()
        if held != rows:
            raise SystemExit(f"--reuse: {work} holds {held:,} rows, not {rows:,}; drop --reuse")
        print(f"reusing {held:,} rows in {work} (no baseline, no ingest)")
        return
    earlier = [p.name for p in (work / "results.sqlite", work / "raw.sqlite") if p.exists()]
    if earlier:
        # Both tables must start empty: the same rows again would break their unique keys.
        raise SystemExit(
            f"{work} holds {' and '.join(earlier)} from an earlier run: pass --reuse to time "
            "the build on its rows, or name a new --dir"
        )
    base_rate = _rates("baseline raw sqlite3.executemany", *_baseline(work / "raw.sqlite", images))
    written, wall, cpu, first = _ingest(url, rows, images)
    rate = _rates("ingest (ResultStore.write_frame)", written, wall, cpu)
    print(f"ingest vs target {INGEST_TARGET_ROWS_S:,.0f} rows/s: ratio "
          f"{rate / INGEST_TARGET_ROWS_S:.2f}; first chunk vs baseline (wall, "
          f"both into an empty table): {first / base_rate:.2f}x; "
          f"peak RSS of the ingest {_peak_mb():,.0f} MB")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--images", type=int, default=50)
    parser.add_argument("--dir", type=Path, default=None, help="Work directory (default: temp).")
    parser.add_argument(
        "--reuse", action="store_true", help="Skip the ingest if DIR already holds --rows rows."
    )
    args = parser.parse_args()
    work = args.dir or Path(tempfile.mkdtemp(prefix="inferx-leaderboard-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{work / 'results.sqlite'}"
    _ingest_or_reuse(work, url, args.rows, args.images, args.reuse)

    # Side by side (as ``inferx leaderboard build`` runs it on two cores), then the same
    # build in one process: the baseline. Each is a fresh process, and a first build: no
    # earlier build left for it to prune. The ingest's memory is in neither.
    runs = {}
    for side_by_side in (True, False):
        for old in (work / "site", work / "site.builds"):
            if old.is_symlink():
                old.unlink()
            elif old.is_dir():
                shutil.rmtree(old)
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            runs[side_by_side] = pool.submit(_build, url, work / "site", side_by_side).result()
    t, alone = runs[True], runs[False]
    print(
        f"read: {t.history_rows:,} history rows + {t.latest_rows:,} newest-image rows, "
        f"wall {t.read[0]:.1f} s, cpu {t.read[1]:.1f} s (this process); peak RSS "
        f"{t.peak_mb[0]:,.0f} MB, its SQLite reader child's {t.reader_mb:,.0f} MB"
    )
    print(
        f"compute + site (fronts, tiers, costs, rankings, history, regressions; {t.pages} "
        f"pages, {t.site_mb:.0f} MB), the two halves side by side: wall {t.build[0]:.1f} s, "
        f"cpu {t.build[1]:.1f} s in this process; counts {t.counts}"
    )
    print(
        f"  baseline, the same in one process: wall {alone.build[0]:.1f} s "
        f"(side by side {alone.build[0] / t.build[0]:.2f}x faster); whole build "
        f"{alone.read[0] + alone.build[0]:.1f} s, peak RSS {alone.peak_mb[1]:,.0f} MB"
    )
    print(
        f"fronts alone (4 statistics, current rows; not part of the build): wall {t.fronts_s:.2f} s"
    )
    total = t.read[0] + t.build[0]
    peak = t.tree_mb
    time_ratio, memory_ratio = BUILD_TARGET_S / total, MEMORY_TARGET_MB / peak
    print(
        f"whole build (read + compute + write): {total:.1f} s "
        f"(target < {BUILD_TARGET_S:.0f} s: ratio {time_ratio:.2f}, {_verdict(time_ratio)})"
    )
    print(
        f"peak RSS of the build, its processes together (sampled): {peak:,.0f} MB (target < "
        f"{MEMORY_TARGET_MB:,.0f} MB: ratio {memory_ratio:.2f}, {_verdict(memory_ratio)}); "
        f"the build process alone {t.peak_mb[1]:,.0f} MB"
    )
    print(f"work directory: {work}")


if __name__ == "__main__":
    main()
