"""Located YAML reading: node positions, YAML 1.2 booleans, duplicate keys, field paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferx_pipeline.errors import RecipeSyntaxError
from inferx_pipeline.recipes.yamlsource import SourceMap, format_path, parse_located, plain

from .conftest import LIMITS

P = Path("r.yaml")


def test_positions_of_values_and_keys() -> None:
    root = parse_located("a:\n  b: [1, 2]\n  c: x\n", P, limits=LIMITS)
    assert root is not None
    source = SourceMap.of(root)
    assert str(source.locate(("a", "b", 1))) == "r.yaml:2:10"
    assert str(source.locate(("a", "c"), key=True)) == "r.yaml:3:3"
    # An absent path falls back to its nearest located ancestor.
    assert str(source.locate(("a", "missing"))) == "r.yaml:2:3"


def test_yaml12_booleans_keep_on_off_as_strings() -> None:
    root = parse_located("t: on\nf: off\ny: yes\nb: true\n", P, limits=LIMITS)
    assert root is not None
    assert plain(root) == {"t": "on", "f": "off", "y": "yes", "b": True}


def test_duplicate_key_is_an_error_naming_both_lines() -> None:
    with pytest.raises(
        RecipeSyntaxError, match=r"r.yaml:3:1: duplicate key 'a' \(first at line 1\)"
    ):
        parse_located("a: 1\nb: 2\na: 3\n", P, limits=LIMITS)


def test_merge_keys_and_anchors_are_expanded() -> None:
    root = parse_located("base: &b {x: 1}\nuse:\n  <<: *b\n  y: 2\n", P, limits=LIMITS)
    assert root is not None
    assert plain(root) == {"base": {"x": 1}, "use": {"x": 1, "y": 2}}


def test_recursive_alias_is_a_syntax_error() -> None:
    with pytest.raises(RecipeSyntaxError, match="recursive YAML alias"):
        parse_located("a: &x [*x]\n", P, limits=LIMITS)


def test_empty_document_is_none() -> None:
    assert parse_located("# only a comment\n", P, limits=LIMITS) is None


def test_format_path() -> None:
    assert format_path(("scenarios", "fixed-seq-len", 0, "search-space", 1, "tp")) == (
        "scenarios.fixed-seq-len[0].search-space[1].tp"
    )
