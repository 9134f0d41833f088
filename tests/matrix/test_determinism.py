"""Property: expansion is deterministic (same input -> same fingerprints, same order)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.golden import GoldenRegistry
from inferx_pipeline.matrix.expand import expand
from inferx_pipeline.recipes.schema import Recipe

from .conftest import recipe_doc

_rows = st.lists(
    st.fixed_dictionaries(
        {
            "tp": st.sampled_from([1, 2, 4, 8]),
            "ep": st.sampled_from([1, 2, 8]),
            "dp-attn": st.booleans(),
            "conc-list": st.lists(st.integers(1, 512), min_size=1, max_size=6, unique=True),
        }
    ),
    min_size=1,
    max_size=4,
)
_blocks = st.lists(
    st.fixed_dictionaries(
        {
            "isl": st.sampled_from([1024, 8192]),
            "osl": st.sampled_from([1024]),
            "search-space": _rows,
        }
    ),
    min_size=1,
    max_size=2,
)


def _reversed(doc: Any) -> Any:
    if isinstance(doc, dict):
        return {key: _reversed(doc[key]) for key in reversed(list(doc))}
    if isinstance(doc, list):
        return [_reversed(item) for item in doc]
    return doc


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(blocks=_blocks)
def test_expansion_is_deterministic(
    blocks: list[dict[str, Any]], golden: GoldenRegistry, catalog: Catalog
) -> None:
    recipe = Recipe.model_validate(recipe_doc(scenarios={"fixed-seq-len": blocks}))
    # The same document with every mapping's keys in reverse order (YAML key order is noise).
    again = Recipe.model_validate(_reversed(recipe_doc(scenarios={"fixed-seq-len": blocks})))
    first = expand([recipe], golden=golden, catalog=catalog, duplicates="keep")
    second = expand([again], golden=golden, catalog=catalog, duplicates="keep")
    assert [(j.job_id, j.fingerprint) for j in first] == [(j.job_id, j.fingerprint) for j in second]
    assert len(first) == sum(len(r["conc-list"]) for b in blocks for r in b["search-space"])
    assert len({j.job_id for j in first}) == len(first) or len(blocks) == 2
