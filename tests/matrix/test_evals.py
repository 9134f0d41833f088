"""Eval selection by catalog/eval-policy.yaml: InferenceX's default, evals-only and all modes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.cli import cli
from inferx_pipeline.errors import CatalogError
from inferx_pipeline.golden import GoldenRegistry
from inferx_pipeline.matrix.eval_catalog import cached_eval_catalog
from inferx_pipeline.matrix.evals import EvalMode, load_eval_policies, runnable
from inferx_pipeline.matrix.expand import expand
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.recipes.schema import Recipe
from tests.paths import ROOT

POLICIES = load_eval_policies(ROOT / "catalog")
EVALS = cached_eval_catalog(ROOT / "catalog")


def _expand(
    recipes: list[Recipe], golden: GoldenRegistry, catalog: Catalog, mode: EvalMode = "default"
) -> list[BenchmarkJob]:
    return expand(
        recipes,
        golden=golden,
        catalog=catalog,
        evals=mode,
        eval_policies=POLICIES,
        eval_catalog=EVALS,
    )


def test_median_and_max_of_the_group(
    make_recipe: Callable[..., Recipe], golden: GoldenRegistry, catalog: Catalog
) -> None:
    # 4..100 -> eligible 16, 32, 64, 100 -> median sorted[2] = 64, max 100
    jobs = _expand([make_recipe()], golden, catalog)
    evals = [j for j in jobs if j.run_eval]
    assert [j.conc for j in evals] == [64, 100]
    assert evals[0].job_id.endswith("/c64/eval")
    assert jobs[jobs.index(evals[0]) - 1].conc == 64  # the eval follows its benchmark job


def test_1k1k_gets_no_default_evals(
    make_recipe: Callable[..., Recipe], golden: GoldenRegistry, catalog: Catalog
) -> None:
    block = {
        "isl": 1024,
        "osl": 1024,
        "search-space": [{"tp": 1, "conc-start": 1, "conc-end": 128}],
    }
    jobs = _expand([make_recipe(scenarios={"fixed-seq-len": [block]})], golden, catalog)
    assert not any(j.run_eval for j in jobs)


def test_eval_jobs_use_real_acceptance_and_eval_max_num_seqs(
    make_recipe: Callable[..., Recipe], golden: GoldenRegistry, catalog: Catalog
) -> None:
    recipe = make_recipe(
        model={
            "hf-id": "Qwen/Qwen3.5-397B-A17B-FP8",
            "model-prefix": "qwen3.5",
            "precision": "fp8",
            "thinking": "on",
        },
        engine={
            "framework": "vllm",
            "image": "vllm/vllm-openai:v0.11.0",
            "max-num-seqs": {"per-conc": 1, "floor": 16, "eval": 256},
        },
        speculative={
            "method": "mtp",
            "draft-tokens": 3,
            "acceptance": "synthetic",
            "curve": "qwen3.5_mtp",
        },
    )
    jobs = _expand([recipe], golden, catalog)
    bench = [j for j in jobs if not j.run_eval]
    evals = [j for j in jobs if j.run_eval]
    assert [j.max_num_seqs for j in bench] == [16, 16, 16, 32, 64, 100]
    assert {(j.spec.acceptance, j.spec.target_al, j.max_num_seqs) for j in evals} == {
        ("real", None, 256)
    }
    assert not {j.fingerprint for j in evals} & {j.fingerprint for j in bench}


def test_recipe_that_never_evals(
    make_recipe: Callable[..., Recipe], golden: GoldenRegistry, catalog: Catalog
) -> None:
    jobs = _expand([make_recipe(eval={"mode": "never"})], golden, catalog)
    assert not any(j.run_eval for j in jobs)


def test_unknown_group_key_is_a_catalog_error(tmp_path: Path) -> None:
    text = (ROOT / "catalog" / "eval-policy.yaml").read_text().replace("dp-attn]", "colour]")
    (tmp_path / "eval-policy.yaml").write_text(text)
    with pytest.raises(CatalogError, match=r"group-by: unknown keys \['colour'\]"):
        load_eval_policies(tmp_path)


def _pool(tp: int) -> dict[str, int]:
    return {"num-worker": 1, "tp": tp}


def _multinode_recipe(make_recipe: Callable[..., Recipe], rows: list[dict[str, Any]]) -> Recipe:
    kinds: dict[str, list[dict[str, Any]]] = {
        "fixed-seq-len": [{"isl": 8192, "osl": 1024, "search-space": rows}],
        "agentic-coding": [{"search-space": rows}],
    }
    return make_recipe(multinode=True, disagg=True, sku="gb200", scenarios=kinds)


def test_agentic_rows_get_evals_only_in_evals_only_modes(
    make_recipe: Callable[..., Recipe], golden: GoldenRegistry, catalog: Catalog
) -> None:
    rows = [{"tp": 4, "conc-list": [4, 64]}, {"tp": 8, "conc-list": [16, 64]}]
    recipe = make_recipe(scenarios={"agentic-coding": [{"search-space": rows}]})
    assert not any(j.run_eval for j in _expand([recipe], golden, catalog))
    # evals-only: per (model, runner, framework, precision) the first job at the highest conc
    evals = [j for j in _expand([recipe], golden, catalog, "evals-only") if j.run_eval]
    assert [j.job_id for j in evals] == ["r1/agentic-coding/tp4/c64/eval"]
    # all: every single-node agentic point
    evals = [j for j in _expand([recipe], golden, catalog, "all") if j.run_eval]
    assert [j.conc for j in evals] == [4, 64, 16, 64]


def test_multinode_picks_each_server_at_its_highest_eligible_conc(
    make_recipe: Callable[..., Recipe], golden: GoldenRegistry, catalog: Catalog
) -> None:
    rows = [
        {"prefill": _pool(4), "decode": _pool(8), "conc-list": [8, 32]},
        {"prefill": _pool(4), "decode": _pool(8), "conc-list": [64, 12]},  # same server
        {"prefill": _pool(8), "decode": _pool(8), "conc-list": [4, 8]},  # none >= 16
    ]
    recipe = _multinode_recipe(make_recipe, rows)
    fixed, agentic = "fixed-seq-len", "agentic-coding"
    modes: tuple[EvalMode, ...] = ("default", "evals-only", "all")
    chosen = {
        mode: [
            (j.scenario, j.label, j.conc)
            for j in _expand([recipe], golden, catalog, mode)
            if j.run_eval
        ]
        for mode in modes
    }
    assert chosen["default"] == [(fixed, "p1xtp4_d1xtp8-row2", 64)]
    assert chosen["evals-only"] == [
        (fixed, "p1xtp4_d1xtp8-row2", 64),
        (agentic, "p1xtp4_d1xtp8-row2", 64),
    ]
    # all: every 8k1k point of every server; each agentic server at its highest conc, any conc
    assert [c for s, _, c in chosen["all"] if s == fixed] == [8, 32, 64, 12, 4, 8]
    assert [(lab, c) for s, lab, c in chosen["all"] if s == agentic] == [
        ("p1xtp4_d1xtp8-row2", 64),
        ("p1xtp8_d1xtp8", 8),
    ]


def test_eval_only_modes_run_eval_jobs_only(
    make_recipe: Callable[..., Recipe], golden: GoldenRegistry, catalog: Catalog
) -> None:
    assert [POLICIES.eval_only(m) for m in ("none", "default", "evals-only", "all")] == [
        False,
        False,
        True,
        True,
    ]
    jobs = _expand([make_recipe()], golden, catalog, "evals-only")
    assert [j.job_id for j in runnable(jobs, eval_only=True)] == [
        "r1/fixed-seq-len-8192x1024/tp8/c64/eval",
        "r1/fixed-seq-len-8192x1024/tp8/c100/eval",
    ]
    assert runnable(jobs, eval_only=False) == jobs


def test_two_rules_for_one_kind_are_a_catalog_error(tmp_path: Path) -> None:
    text = (ROOT / "catalog" / "eval-policy.yaml").read_text()
    text = text.replace("        - *fixed-multinode\n", "        - *fixed-single-node\n")
    (tmp_path / "eval-policy.yaml").write_text(text)
    with pytest.raises(
        CatalogError,
        match=r"evals-only: more than one rule for \[\('fixed-seq-len', 'single-node'\)\]",
    ):
        load_eval_policies(tmp_path)


def _listed(*flags: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(cli, ["matrix", *flags, "--format", "json"])
    assert result.exit_code == 0, result.output
    jobs: list[dict[str, Any]] = json.loads(result.output)
    return jobs


def test_eval_flags_pick_one_mode_the_last_wins() -> None:
    plain, with_evals, only = _listed(), _listed("--evals"), _listed("--evals-only")
    assert not any(j["run_eval"] for j in plain)
    evals = [j["job_id"] for j in with_evals if j["run_eval"]]
    assert evals and len(with_evals) == len(plain) + len(evals)
    assert only and all(j["run_eval"] for j in only)
    assert set(evals) <= {j["job_id"] for j in only}  # agentic evals come on top
    assert _listed("--all-evals", "--no-evals") == plain
