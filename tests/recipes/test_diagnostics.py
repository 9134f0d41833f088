"""Validation errors mapped to YAML nodes: union branches, nested unknown keys, missing keys."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from inferx_pipeline.recipes.loader import LoadResult

BASE = Path(__file__).resolve().parents[1] / "fixtures/recipes/_fragments/base.yaml"


def _errors(tmp_path: Path, load: Callable[..., LoadResult], body: str) -> list[str]:
    # The fragment is copied in: extends resolves only inside the recipe's tree.
    (tmp_path / "_base.yaml").write_text(BASE.read_text())
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"extends: _base.yaml\nid: r\n{body}")
    return [str(e).removeprefix(f"{recipe}:") for e in load(recipe).errors]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "engine:\n  max-num-seqs: abc\n",
            "4:17: engine.max-num-seqs: got 'abc'; expected a valid integer or a mapping [schema]",
        ),
        (
            "engine:\n  max-num-seqs: {per-conc: 1, flor: 3}\n",
            "4:31: engine.max-num-seqs.flor: got an unknown key; expected one of: eval, floor, "
            "per-conc; remove or rename it [schema]",
        ),
        (
            "scenarios:\n  fixed-seq-len:\n    - {isl: 1, osl: 1, search-space: "
            "[{prefill: {num-worker: 1, tp: 1, xx: 1}, decode: {num-worker: 1, tp: 1}, "
            "conc-list: [1]}]}\n",
            "5:72: scenarios.fixed-seq-len[0].search-space[0].prefill.xx: got an unknown key; "
            "expected one of: additional-settings, dcp-size, dp-attn, ep, num-worker, pcp-size, "
            "pp, tp; remove or rename it [schema]",
        ),
        (
            "scenarios:\n  fixed-seq-len:\n    - {isl: 1, osl: 1, search-space: [{tp: 1}]}\n",
            "5:39: scenarios.fixed-seq-len[0].search-space[0]: give conc-list, or both "
            "conc-start and conc-end [schema]",
        ),
        (
            "speculative:\n  method: eagle3\n",
            "4:3: speculative: method eagle3 needs draft-model (the draft checkpoint) [schema]",
        ),
        ("3: x\n", "3:1: got key 3; expected a string key (quote it) [schema]"),
    ],
)
def test_error_lines(
    tmp_path: Path, load: Callable[..., LoadResult], body: str, expected: str
) -> None:
    assert _errors(tmp_path, load, body) == [expected]


def test_missing_keys_point_at_their_mapping(
    tmp_path: Path, load: Callable[..., LoadResult]
) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text("id: r\nsku: h200\nmodel:\n  hf-id: x\n")
    lines = [str(e) for e in load(recipe).errors]
    assert (
        f"{recipe}:4:3: model.model-prefix: got no value; expected this required key; add it "
        "[schema]" in lines
    )
    assert (
        f"{recipe}:1:1: engine: got no value; expected this required key; add it [schema]" in lines
    )
