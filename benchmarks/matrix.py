"""Time ``inferx matrix`` over the imported InferenceX configs as whole processes, against
a floor measured in the same run.

The floor is a fresh Python process that only parses InferenceX's two master files with
PyYAML's C loader (``yaml.load(f, Loader=yaml.CSafeLoader)``): the least any tool that
reads those configs pays. Every other line is a fresh ``inferx`` process (wall time,
start-up and imports included) and its ratio to the floor, with the target and whether
it is met:

- ``matrix`` (target 2x): ``inferx matrix DIR --no-policy --allow-duplicates`` over the
  208 imported recipes, in the default table format and ``--format json``; all 2,078
  jobs, exit 0. These are InferenceX's own rules: its configs run rows twice and break
  some pre-GPU rules, which our strict default refuses (exit 2).
  *cold* runs with an empty matrix cache (``INFERX_MATRIX_CACHE_DIR`` a new folder each
  time: parse, validate, expand, render, then store); *warm* repeats it with the cache
  primed and every input unchanged (digest the inputs, print the stored text).
- ``import + matrix`` (target 4x): ``inferx import-inferencex masters A B --out DIR``
  then the table ``matrix`` above, two processes, timed together. *cold*: a new DIR
  and an empty cache each time; *warm*: importing again into the same DIR (identical
  bytes), so the matrix is answered from the cache.

Each figure is the best (and median) of ``REPEATS`` runs, every process pinned to one
CPU. A target counts as met on the best figure; the line says which of cold and warm
meets it.

Run: ``.venv/bin/python benchmarks/matrix.py``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

REPEATS = 5
EXPECTED_JOBS = 2078
EXPECTED_RECIPES = 208
ROOT = Path(__file__).resolve().parents[1]
MASTERS = [
    ROOT / "third_party" / "inferencex" / "configs" / name
    for name in ("amd-master.yaml", "nvidia-master.yaml")
]
INFERX = Path(sys.executable).with_name("inferx")
FLOOR = "import yaml, sys; [yaml.load(open(f), Loader=yaml.CSafeLoader) for f in sys.argv[1:]]"
PARITY = ("--no-policy", "--allow-duplicates")  # InferenceX's rules (see the docstring)


def _run(argv: list[str], env: Mapping[str, str]) -> str:
    done = subprocess.run(argv, env=dict(env), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


def _best_of(once: Callable[[], float]) -> tuple[float, float]:
    """(best, median) seconds of REPEATS calls of ``once`` (which returns its own time)."""
    times = [once() for _ in range(REPEATS)]
    return min(times), statistics.median(times)


def _timed(argv: list[str], env: Mapping[str, str]) -> float:
    start = time.perf_counter()
    _run(argv, env)
    return time.perf_counter() - start


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "INFERX_MATRIX_CACHE_DIR": str(cache)}


def _matrix(folder: Path, fmt: str) -> list[str]:
    return [str(INFERX), "matrix", str(folder), *PARITY, "--format", fmt]


def _import(out: Path) -> list[str]:
    return [str(INFERX), "import-inferencex", "masters", *map(str, MASTERS), "--out", str(out)]


def _check_output(folder: Path, cache: Path) -> None:
    # Every job printed, in both formats, before anything is timed.
    table = _run(_matrix(folder, "table"), _env(cache))
    assert table.startswith(f"{EXPECTED_JOBS} jobs\n"), table[:200]
    jobs = json.loads(_run(_matrix(folder, "json"), _env(cache)))
    assert len(jobs) == EXPECTED_JOBS, len(jobs)


def _matrix_rows(
    folder: Path, fmt: str, new_dir: Callable[[str], Path]
) -> list[tuple[str, tuple[float, float], float | None]]:
    cold = _best_of(lambda: _timed(_matrix(folder, fmt), _env(new_dir("cache"))))
    primed = new_dir("cache")
    _run(_matrix(folder, fmt), _env(primed))
    warm = _best_of(lambda: _timed(_matrix(folder, fmt), _env(primed)))
    return [
        (f"matrix --format {fmt}, cold (empty cache)", cold, 2.0),
        (f"matrix --format {fmt}, warm (cache hit)", warm, 2.0),
    ]


def main() -> None:
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[0]})  # children inherit it
    rows: list[tuple[str, tuple[float, float], float | None]] = []
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        fresh = iter(range(10**6))

        def new_dir(kind: str) -> Path:
            return scratch / f"{kind}-{next(fresh)}"

        floor = _best_of(
            lambda: _timed([sys.executable, "-c", FLOOR, *map(str, MASTERS)], os.environ)
        )
        rows.append(("floor: PyYAML CSafeLoader, both masters", floor, None))
        folder = scratch / "imported"
        _run(_import(folder), os.environ)
        assert len(list(folder.glob("*.yaml"))) == EXPECTED_RECIPES
        _check_output(folder, new_dir("cache"))
        for fmt in ("table", "json"):
            rows += _matrix_rows(folder, fmt, new_dir)

        def import_then_matrix(out: Path, cache: Path) -> float:
            return _timed(_import(out), _env(cache)) + _timed(_matrix(out, "table"), _env(cache))

        cold_pair = _best_of(lambda: import_then_matrix(new_dir("out"), new_dir("cache")))
        rows.append(("import + matrix, cold (new dir, empty cache)", cold_pair, 4.0))
        again, primed = new_dir("out"), new_dir("cache")
        import_then_matrix(again, primed)
        warm_pair = _best_of(lambda: import_then_matrix(again, primed))
        rows.append(("import + matrix, warm (same dir, cache hit)", warm_pair, 4.0))
    print(f"pinned to CPU {cpus[0]} of {len(cpus)}; best and median of {REPEATS} processes")
    base = floor[0]
    for name, (best, median), target in rows:
        verdict = ""
        if target is not None:
            met = "met" if best / base <= target else "NOT met"
            verdict = f"  target {target:.0f}x: {met}"
        print(
            f"{name:<46} best {best:.3f} s  median {median:.3f} s  "
            f"= {best / base:5.2f}x floor{verdict}"
        )


if __name__ == "__main__":
    main()
