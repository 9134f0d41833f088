"""Property tests: random recipe-like documents never crash the loader, only produce findings."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.errors import RecipeError
from inferx_pipeline.golden import GoldenRegistry
from inferx_pipeline.recipes.loader import load_recipes
from inferx_pipeline.recipes.policy.data import PolicyData
from inferx_pipeline.recipes.yamlsource import parse_located

from .conftest import LIMITS, ROOT

KEYS = [
    "id", "model", "hf-id", "model-prefix", "precision", "thinking", "sku", "engine",
    "framework", "image", "args", "env", "max-num-seqs", "per-conc", "speculative", "method",
    "draft-tokens", "acceptance", "curve", "scenarios", "fixed-seq-len", "agentic-coding",
    "isl", "osl", "search-space", "tp", "ep", "dp-attn", "conc-list", "conc-start",
    "conc-end", "kv-offloading", "kv-offload-backend", "prefill", "decode", "extends",
    "acceptance-length", "eval",
]  # fmt: skip

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.sampled_from(["on", "off", "mtp", "vllm", "sglang", "dram", "h200", "fp8", "x:y"]),
)
keys = st.one_of(st.sampled_from(KEYS), st.text(min_size=1, max_size=8), st.integers(0, 3))
documents = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=6)),
    max_leaves=30,
)

BASE: dict[str, Any] = yaml.safe_load(
    (ROOT / "tests/fixtures/recipes/_fragments/base.yaml").read_text()
) | {"id": "prop"}


def _mutate(doc: Any, path: list[str | int], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict) and isinstance(head, str):
        return {**doc, head: _mutate(doc.get(head), rest, value)}
    if isinstance(doc, list) and isinstance(head, int) and doc:
        i = head % len(doc)
        return [*doc[:i], _mutate(doc[i], rest, value), *doc[i + 1 :]]
    return value


paths = st.lists(st.one_of(st.sampled_from(KEYS), st.integers(0, 3)), max_size=5)


def _load_text(text: str, catalog: Catalog, golden: GoldenRegistry, data: PolicyData) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "r.yaml"
        path.write_text(text)
        result = load_recipes([path], catalog=catalog, golden=golden, policy=data)
        assert bool(result.recipes) != bool(result.errors)
        assert all(str(f) for f in result.errors + result.warnings)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=documents)
def test_random_documents_never_crash(
    doc: Any, catalog: Catalog, golden: GoldenRegistry, policy: PolicyData
) -> None:
    _load_text(yaml.safe_dump(doc), catalog, golden, policy)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=paths, value=documents)
def test_mutated_valid_recipes_never_crash(
    path: list[str | int], value: Any, catalog: Catalog, golden: GoldenRegistry, policy: PolicyData
) -> None:
    _load_text(yaml.safe_dump(_mutate(BASE, path, value)), catalog, golden, policy)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("ab:-[]{}&*!|>'\"#\n ,?%@`0.\t")), max_size=60))
def test_random_text_is_yaml_or_a_syntax_error(text: str) -> None:
    with contextlib.suppress(RecipeError):
        parse_located(text, Path("r.yaml"), limits=LIMITS)
