"""Property: a value set through any path is judged by the same rule as the typed field.

Each property draws a seed recipe, a value and a path (typed field, ``engine.args`` as a
mapping, ``--flag=value``, a literal argv list with the flag's name respelled, a JSON
value inside a flag, ``engine.env``, ``speculative.options``) and checks that
``inferx validate``'s verdict for that rule does not depend on the path.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.golden import GoldenRegistry
from inferx_pipeline.matrix.eval_catalog import cached_eval_catalog
from inferx_pipeline.matrix.runners import cached_runners
from inferx_pipeline.plan.crosscheck import validate_recipes
from inferx_pipeline.recipes.policy.data import PolicyData

from .conftest import ROOT

SEEDS = {
    "q8h": "recipes/qwen3.8-27b/qwen3.827b-fp8-h200-vllm-mtp.yaml",
    "q8m": "recipes/qwen3.8-27b/qwen3.827b-bf16-mi325x-vllm-mtp.yaml",
    "q35": "recipes/qwen3.5/qwen3.5-fp8-mi300x-sglang-agentic-mtp.yaml",
    "mm": "recipes/minimaxm3/minimaxm3-fp8-mi325x-vllm-agentic-mtp.yaml",
}
SYNTHETIC_VLLM = ("q8m", "mm")
AMD_VLLM = ("q8m", "mm")
SETTINGS = settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

Judge = Callable[[str, dict[str, Any]], set[str]]


def _judge(catalog: Catalog, golden: GoldenRegistry, policy: PolicyData) -> Judge:
    runners = cached_runners(ROOT / "catalog")

    def rules(seed: str, overlay: dict[str, Any]) -> set[str]:
        # The seed's own args and env are kept: an overlay adds to them, as an author would.
        base = yaml.safe_load((ROOT / SEEDS[seed]).read_text())
        engine = overlay.get("engine", {})
        for key in ("args", "env"):
            if key in engine and isinstance(engine[key], dict):
                engine[key] = {**(base.get("engine", {}).get(key) or {}), **engine[key]}
        doc = {"extends": str(ROOT / SEEDS[seed]), "id": f"prop-{seed}", **overlay}
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "r.yaml"
            path.write_text(yaml.safe_dump(doc))
            result = validate_recipes(
                [path],
                catalog=catalog,
                golden=golden,
                policy=policy,
                runners=runners,
                evals=cached_eval_catalog(ROOT / "catalog"),
            )
        assert all("\n" not in str(f) and "\x00" not in str(f) for f in result.errors)
        return {e.rule for e in result.errors}

    return rules


def _respelled(draw: st.DrawFn, flag: str) -> str:
    """``flag`` with each ``-`` between words drawn as ``-`` or ``_`` (engines read both)."""
    first, *rest = flag.lstrip("-").split("-")
    return "--" + first + "".join(draw(st.sampled_from(["-", "_"])) + w for w in rest)


@st.composite
def _utilization_paths(draw: st.DrawFn) -> tuple[str, float, dict[str, Any]]:
    seed = draw(st.sampled_from(sorted(SEEDS)))
    value = draw(st.sampled_from([0.5, 0.8, 0.9, 0.92, 0.93, 0.95, 0.96, 0.99]))
    flag = "--mem-fraction-static" if seed == "q35" else "--gpu-memory-utilization"
    spelled = _respelled(draw, flag)
    path = draw(
        st.sampled_from(
            [
                {"engine": {"args": {spelled: value}}},
                {"engine": {"args": {f"{spelled}={value}": True}}},
                {"engine": {"args": ["--trust-remote-code", spelled, str(value)]}},
            ]
        )
    )
    return seed, value, path


@SETTINGS
@given(case=_utilization_paths())
def test_hbm_fraction_is_judged_alike_by_every_path(
    case: tuple[str, float, dict[str, Any]],
    catalog: Catalog,
    golden: GoldenRegistry,
    policy: PolicyData,
) -> None:
    seed, value, overlay = case
    judge = _judge(catalog, golden, policy)
    typed = judge(seed, {"engine": {"gpu-memory-utilization": value}})
    assert ("memory-fit" in judge(seed, overlay)) == ("memory-fit" in typed)


@st.composite
def _acceptance_paths(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    seed = draw(st.sampled_from(SYNTHETIC_VLLM))
    value = draw(st.floats(min_value=1.0, max_value=4.0).map(lambda v: round(v, 2)))
    key = draw(st.sampled_from(["synthetic_acceptance_length", "synthetic-acceptance-length"]))
    config = json.dumps({"method": "eagle3" if seed == "mm" else "mtp", key: value})
    spelled = _respelled(draw, "--speculative-config")
    overlay = draw(
        st.sampled_from(
            [
                {"speculative": {"options": {key: value}}},
                {"engine": {"args": {spelled: config}}},
                {"engine": {"args": [f"{spelled}={config}"]}},
            ]
        )
    )
    return seed, overlay


@SETTINGS
@given(case=_acceptance_paths())
def test_hand_set_acceptance_is_golden_al_only_by_every_path(
    case: tuple[str, dict[str, Any]],
    catalog: Catalog,
    golden: GoldenRegistry,
    policy: PolicyData,
) -> None:
    seed, overlay = case
    assert "golden-al-only" in _judge(catalog, golden, policy)(seed, overlay)


def _cased(draw: st.DrawFn, text: str) -> str:
    return "".join(c.upper() if draw(st.booleans()) else c.lower() for c in text)


@st.composite
def _backend_paths(draw: st.DrawFn) -> tuple[str, str, dict[str, Any]]:
    seed = draw(st.sampled_from(AMD_VLLM))
    name = draw(st.sampled_from(["mooncake", "lmcache", "native"]))
    spelled = _cased(draw, name)
    flag = _respelled(draw, "--kv-offloading-backend")
    transfer = json.dumps({"kv_connector": f"{spelled}Connector", "kv_role": "kv_both"})
    overlay = draw(
        st.sampled_from(
            [
                {"engine": {"args": {flag: spelled}}},
                {"engine": {"args": {_respelled(draw, "--kv-transfer-config"): transfer}}},
            ]
        )
    )
    return seed, spelled, overlay


def _dram_row(backend: str) -> dict[str, Any]:
    row = {"tp": 8, "spec-decoding": "mtp", "kv-offloading": "dram", "conc-list": [4, 8]}
    row["kv-offload-backend"] = {"name": backend}
    return {"scenarios": {"agentic-coding": [{"dram-utilization": 0.8, "search-space": [row]}]}}


@SETTINGS
@given(case=_backend_paths())
def test_kv_offload_backend_is_judged_alike_by_every_path(
    case: tuple[str, str, dict[str, Any]],
    catalog: Catalog,
    golden: GoldenRegistry,
    policy: PolicyData,
) -> None:
    seed, backend, overlay = case
    judge = _judge(catalog, golden, policy)
    forbidden = backend.lower() == "mooncake"
    assert ("vendor-kv-offload" in judge(seed, overlay)) == forbidden
    if seed == "mm":  # an agentic seed: the typed row field is a path too
        assert ("vendor-kv-offload" in judge(seed, _dram_row(backend))) == forbidden


@st.composite
def _secret_paths(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    seed = draw(st.sampled_from(sorted(SEEDS)))
    name = draw(st.sampled_from(["HF_TOKEN", "REGISTRY_PASSWORD", "S3_SECRET_KEY", "API_KEY"]))
    value = draw(st.text(alphabet="abcdefXYZ0123456789", min_size=1, max_size=12))
    overlay = draw(
        st.sampled_from(
            [
                {"engine": {"env": {_cased(draw, name): value}}},
                {
                    "engine": {
                        "args": {_respelled(draw, "--" + name.lower().replace("_", "-")): value}
                    }
                },
                {"engine": {"args": [f"--{name.lower()}={value}"]}},
                {"speculative": {"options": {name.lower(): value}}},
            ]
        )
    )
    return seed, overlay


@SETTINGS
@given(case=_secret_paths())
def test_secret_literal_is_found_by_every_path(
    case: tuple[str, dict[str, Any]],
    catalog: Catalog,
    golden: GoldenRegistry,
    policy: PolicyData,
) -> None:
    seed, overlay = case
    assert "secret-literal" in _judge(catalog, golden, policy)(seed, overlay)


_TEXT = st.text(alphabet=st.sampled_from(list('ab{}[]":,=_-\n\x00 Mooncake0.9')), max_size=24)
_FLAGS = st.sampled_from(
    ["--speculative-config", "--kv-transfer-config", "--gpu_memory_utilization", "--x", "-y"]
)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    seed=st.sampled_from(sorted(SEEDS)),
    args=st.one_of(
        st.dictionaries(_FLAGS, st.one_of(_TEXT, st.booleans(), st.floats(0, 2)), max_size=3),
        st.lists(st.one_of(_FLAGS, _TEXT), max_size=5),
    ),
    env=st.dictionaries(st.sampled_from(["HF_TOKEN", "A", "MOONCAKE", "x\ny"]), _TEXT, max_size=2),
    options=st.dictionaries(st.sampled_from(["num_speculative_tokens", "k"]), _TEXT, max_size=2),
)
def test_any_engine_setup_is_judged_without_crashing(
    seed: str,
    args: dict[str, Any] | list[str],
    env: dict[str, str],
    options: dict[str, str],
    catalog: Catalog,
    golden: GoldenRegistry,
    policy: PolicyData,
) -> None:
    overlay = {"engine": {"args": args, "env": env}, "speculative": {"options": options}}
    # Only the verdict's shape is checked (by _judge): every finding is one printable line.
    _judge(catalog, golden, policy)(seed, overlay)
