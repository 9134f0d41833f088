"""Time load + validate + expand of every imported InferenceX recipe (2,078 jobs).

Prints the wall time of each phase, jobs/s, and peak Python memory (tracemalloc), with
the ratio to the 1 s target. Run: ``.venv/bin/python benchmarks/matrix.py``.
"""

from __future__ import annotations

import tempfile
import time
import tracemalloc
from pathlib import Path

from inferx_pipeline.catalog import load_catalog
from inferx_pipeline.golden import load_golden
from inferx_pipeline.matrix.expand import expand
from inferx_pipeline.matrix.inferencex import import_masters
from inferx_pipeline.matrix.runners import load_runners
from inferx_pipeline.recipes.loader import load_recipes
from inferx_pipeline.settings import Settings

TARGET_S = 1.0
SHARED = Path(__file__).resolve().parents[2] / "shared" / "inferencex" / "configs"


def _run(out: Path, *, policy: bool) -> tuple[float, float, int, int]:
    """(load s, expand s, recipes loaded, jobs) for one pass over ``out``."""
    settings = Settings()
    catalog = load_catalog(settings.catalog_dir)
    golden = load_golden(settings.golden_dir)
    runners = load_runners(settings.catalog_dir)
    start = time.perf_counter()
    loaded = load_recipes([out], catalog=catalog, golden=golden, run_policy=policy)
    loaded_at = time.perf_counter()
    jobs = expand(
        loaded.recipes, golden=golden, catalog=catalog, runners=runners, duplicates="keep"
    )
    assert len({job.fingerprint for job in jobs}) > 0
    done = time.perf_counter()
    return loaded_at - start, done - loaded_at, len(loaded.recipes), len(jobs)


def main() -> None:
    settings = Settings()
    masters = [SHARED / "amd-master.yaml", SHARED / "nvidia-master.yaml"]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        import_masters(
            masters, out, load_runners(settings.catalog_dir), load_catalog(settings.catalog_dir)
        )
        load_s, expand_s, recipes, jobs = _run(out, policy=False)
        policy_load_s, _, policy_ok, _ = _run(out, policy=True)
        tracemalloc.start()
        _run(out, policy=False)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    total = load_s + expand_s
    print(f"load+validate (schema): {load_s:.3f} s  ({recipes} recipes)")
    print(f"expand+fingerprint:     {expand_s:.3f} s")
    print(f"total:                  {total:.3f} s for {jobs} jobs = {jobs / total:,.0f} jobs/s")
    print(f"peak traced memory:     {peak / 2**20:.1f} MiB (separate pass under tracemalloc)")
    print(f"ratio to {TARGET_S:.0f} s target:   {total / TARGET_S:.2f}x")
    print(
        f"with the pre-GPU policy rules: load {policy_load_s:.3f} s "
        f"({policy_ok} of {recipes} imported recipes pass; the rest lack bash-side facts)"
    )


if __name__ == "__main__":
    main()
