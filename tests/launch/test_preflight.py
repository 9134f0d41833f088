"""Preflight logic with a fake probe runner: fact parsing, unknown facts, cache, rules."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from inferx_pipeline.errors import PreflightError
from inferx_pipeline.launch.fake import FakeProbeRunner
from inferx_pipeline.launch.preflight import (
    FactCache,
    FactProbe,
    FactRule,
    default_probes,
    preflight,
    version_at_least,
    version_in_range,
    version_tuple,
)

PROBES = default_probes().for_engine("vllm")
PY, VLLM = (p.argv for p in PROBES)


def test_table_has_python_for_all_and_a_version_per_engine() -> None:
    table = default_probes()
    assert [p.name for p in table.common] == ["python_version"]
    assert set(table.engines) == {"vllm", "sglang", "trt", "atom", "sim"}
    assert table.for_engine("unknown-engine") == table.common


def test_facts_parsed_and_cached_by_digest_and_argv(tmp_path: Path) -> None:
    runner = FakeProbeRunner(
        {PY: (0, "3.12.3 (main, Apr 2025) [GCC 13]\n"), VLLM: (0, "0.11.1rc2.dev7+gabc\n")}
    )
    cache = FactCache(tmp_path / "facts.json")
    facts = preflight("vllm/vllm-openai:nightly", PROBES, runner, cache)
    assert (facts.python_version, facts.engine_version) == ("3.12.3", "0.11.1rc2.dev7+gabc")
    assert preflight("vllm/vllm-openai:nightly", PROBES, runner, cache) == facts
    assert runner.runs == 2
    changed = FactProbe(name="engine_version", argv=("python3", "-c", "other"))
    preflight("vllm/vllm-openai:nightly", (PROBES[0], changed), runner, cache)
    assert runner.runs == 3  # a probe whose command changed is not served from the cache


def test_missing_module_leaves_the_fact_unknown(tmp_path: Path) -> None:
    runner = FakeProbeRunner({PY: (0, "3.11.2\n"), VLLM: (1, "ModuleNotFoundError: vllm\n")})
    facts = preflight("img", PROBES, runner, FactCache(tmp_path / "f.json"))
    assert facts.facts == {"python_version": "3.11.2", "engine_version": None}


def test_broken_rule_raises_naming_fact_value_and_rule(tmp_path: Path) -> None:
    runner = FakeProbeRunner({PY: (0, "3.10.12\n")}, digest="sha256:d")
    rule = FactRule(
        name="image-facts", fact="python_version", label="python",
        check=lambda v: version_in_range(v, "3.11", "3.14"),
        expected="agentic recipes need >= 3.11, < 3.14",
    )  # fmt: skip
    with pytest.raises(PreflightError) as info:
        preflight("img:1", PROBES, runner, FactCache(tmp_path / "f.json"), [rule])
    assert str(info.value) == (
        "image img:1: python 3.10.12; agentic recipes need >= 3.11, < 3.14 (rule image-facts); "
        "image digest sha256:d: use an image that satisfies it or change the recipe"
    )


def test_torn_cache_file_is_rebuilt(tmp_path: Path) -> None:
    cache = FactCache.under(tmp_path)
    assert cache.path == tmp_path / "image-facts.json"
    cache.path.write_text("{not json")
    runner = FakeProbeRunner({PY: (0, "3.11.2\n")})
    assert preflight("img", PROBES[:1], runner, cache).python_version == "3.11.2"
    assert runner.runs == 1


def test_version_tuple() -> None:
    assert version_tuple("3.11.2") == (3, 11, 2)
    assert version_tuple("0.11.1rc2.dev7") == (0, 11, 1)
    assert version_tuple(None) is None
    assert version_tuple("unknown") is None


def test_version_predicates_treat_unknown_as_failing() -> None:
    assert version_in_range("3.11.2", "3.11", "3.14") and version_in_range("3.13.9", "3.11", "3.14")
    assert not version_in_range("3.10.12", "3.11", "3.14")
    assert not version_in_range("3.14.0", "3.11", "3.14")
    assert not version_in_range(None, "3.11", "3.14")
    assert version_at_least("0.5.16.post1", "0.5.16") and not version_at_least("0.5.9", "0.5.16")
    assert not version_at_least("nightly", "0.5.16")


def test_cache_writes_from_threads_of_one_process_do_not_collide(tmp_path: Path) -> None:
    """Two sweeps' preflights in one process (Dagster runs threads) store at once."""
    cache = FactCache(tmp_path / "facts.json")
    barrier = threading.Barrier(4)

    def store(worker: int) -> None:
        barrier.wait()
        for i in range(100):
            cache.store(f"sha256:{worker}-{i}", {PROBES[0]: "3.11.2"})

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(store, range(4)))  # re-raises a worker's error
    # Entries may be lost to a concurrent writer (the cache is refilled); the file never is.
    assert isinstance(json.loads(cache.path.read_text()), dict)
    assert [p.name for p in tmp_path.iterdir()] == ["facts.json"]
