"""Time load + validate + expand of every imported InferenceX recipe (2,078 jobs), one core.

The headline is what ``inferx validate`` on the imported folder does, end to end: read
the catalog, golden curves, policy data and runner labels; parse, merge and
schema-validate the 208 recipes; run every pre-GPU rule; expand all of them into jobs
with fingerprints and check labels and identical jobs. Then each phase alone, to show
where the time goes. The process is pinned to one CPU; each figure is the best (and
median) of ``REPEATS`` runs. Prints jobs/s, peak traced memory, max RSS, and the ratio
to the 1 s target.

Run: ``.venv/bin/python benchmarks/matrix.py``.
"""

from __future__ import annotations

import os
import resource
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from inferx_pipeline.catalog import Catalog, load_catalog
from inferx_pipeline.golden import GoldenRegistry, load_golden
from inferx_pipeline.matrix.eval_catalog import load_eval_catalog
from inferx_pipeline.matrix.expand import expand
from inferx_pipeline.matrix.import_defaults import load_import_defaults
from inferx_pipeline.matrix.inferencex import import_masters
from inferx_pipeline.matrix.runners import RunnerCatalog, load_runners
from inferx_pipeline.plan.crosscheck import validate_recipes
from inferx_pipeline.recipes import policy as rules
from inferx_pipeline.recipes.loader import LoadResult, load_recipes
from inferx_pipeline.recipes.policy.data import PolicyData, load_policy
from inferx_pipeline.settings import Settings

TARGET_S = 1.0
REPEATS = 5
EXPECTED_JOBS = 2078
INFERENCEX_CONFIGS = Path(__file__).resolve().parents[1] / "third_party" / "inferencex" / "configs"
T = TypeVar("T")

Data = tuple[Catalog, GoldenRegistry, PolicyData, RunnerCatalog]


def _data(settings: Settings) -> Data:
    return (
        load_catalog(settings.catalog_dir),
        load_golden(settings.golden_dir),
        load_policy(settings.catalog_dir),
        load_runners(settings.catalog_dir),
    )


def _validate(settings: Settings, folder: Path) -> LoadResult:
    catalog, golden, policy, runners = _data(settings)
    evals = load_eval_catalog(settings.catalog_dir)
    return validate_recipes(
        [folder], catalog=catalog, golden=golden, policy=policy, runners=runners, evals=evals
    )


def _timed(fn: Callable[[], T]) -> tuple[float, float, T]:
    """(best s, median s, last result) of REPEATS calls."""
    times: list[float] = []
    result: T
    for _ in range(REPEATS):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times), result


def _phases(settings: Settings, folder: Path) -> dict[str, tuple[float, float]]:
    data_best, data_median, (catalog, golden, policy, runners) = _timed(lambda: _data(settings))
    load_best, load_median, loaded = _timed(
        lambda: load_recipes([folder], catalog=catalog, golden=golden, run_policy=False)
    )

    def check() -> int:
        return sum(
            len(rules.check(r.recipe, catalog=catalog, golden=golden, data=policy, where=r))
            for r in loaded.parsed
        )

    def jobs() -> int:
        expanded = expand(
            loaded.parsed, golden=golden, catalog=catalog, runners=runners, duplicates="keep"
        )
        assert len({(j.fingerprint, j.conc) for j in expanded}) > 0  # fingerprints computed
        return len(expanded)

    rules_best, rules_median, _ = _timed(check)
    expand_best, expand_median, count = _timed(jobs)
    assert count == EXPECTED_JOBS, count
    return {
        "catalog+golden+policy+runner data": (data_best, data_median),
        "parse+extends+schema (208 files)": (load_best, load_median),
        "pre-GPU rules": (rules_best, rules_median),
        f"expand+fingerprint ({count} jobs)": (expand_best, expand_median),
    }


def _pin_one_core() -> str:
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[0]})
    return f"CPU {cpus[0]} of {len(cpus)}"


def main() -> None:
    settings = Settings()
    core = _pin_one_core()
    masters = [INFERENCEX_CONFIGS / "amd-master.yaml", INFERENCEX_CONFIGS / "nvidia-master.yaml"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        report = import_masters(
            masters,
            folder,
            load_runners(settings.catalog_dir),
            load_catalog(settings.catalog_dir),
            load_import_defaults(settings.catalog_dir),
        )
        import_s = time.perf_counter() - start
        best, median, result = _timed(lambda: _validate(settings, folder))
        phases = _phases(settings, folder)
        tracemalloc.start()
        _validate(settings, folder)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"pinned to {core}; best and median of {REPEATS} runs")
    print(f"import of both master files: {import_s:.3f} s ({len(report.files)} recipes)")
    print(
        f"inferx validate over them (load + rules + expand {EXPECTED_JOBS} jobs + cross "
        f"checks): best {best:.3f} s, median {median:.3f} s "
        f"({len(result.parsed)} recipes, {len(result.errors)} errors reported)"
    )
    print(
        f"  = {EXPECTED_JOBS / best:,.0f} jobs/s; ratio to the {TARGET_S:.0f} s target: "
        f"{best / TARGET_S:.2f}x (median {median / TARGET_S:.2f}x)"
    )
    print(f"  peak traced memory {peak / 2**20:.1f} MiB; process max RSS {rss_mib:.0f} MiB")
    print("phases alone:")
    for name, (phase_best, phase_median) in phases.items():
        print(f"  {name:<36} best {phase_best:.3f} s  median {phase_median:.3f} s")


if __name__ == "__main__":
    main()
