"""``extends:``: deep merge of mappings, lists replaced, chains, cycles and missing files."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferx_pipeline.errors import ExtendsError, RecipeSchemaError
from inferx_pipeline.recipes.extends import ExtendsResolver
from inferx_pipeline.recipes.yamlsource import SourceMap, plain

from .conftest import LIMITS


def _write(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_mappings_merge_lists_replace_later_bases_win(tmp_path: Path) -> None:
    _write(tmp_path, "_f/one.yaml", "engine: {framework: vllm, env: {A: '1'}}\nlist: [1, 2]\n")
    _write(tmp_path, "_f/two.yaml", "engine: {env: {B: '2'}}\nlist: [3]\nk: two\n")
    recipe = _write(
        tmp_path, "r.yaml", "extends: [_f/one.yaml, _f/two.yaml]\nengine: {env: {A: x}}\n"
    )
    resolved = ExtendsResolver(limits=LIMITS).resolve(recipe)
    assert plain(resolved.root) == {
        "engine": {"framework": "vllm", "env": {"A": "x", "B": "2"}},
        "list": [3],
        "k": "two",
    }
    assert resolved.chain == (recipe, tmp_path / "_f/one.yaml", tmp_path / "_f/two.yaml")
    source = SourceMap.of(resolved.root)
    framework = source.locate(("engine", "framework"))
    assert framework is not None and framework.file == tmp_path / "_f/one.yaml"
    own = source.locate(("engine", "env", "A"))
    assert own is not None and own.file == recipe


def test_nested_fragments_record_their_include_path(tmp_path: Path) -> None:
    _write(tmp_path, "_f/inner.yaml", "a: 1\n")
    _write(tmp_path, "_f/outer.yaml", "extends: inner.yaml\nb: 2\n")
    recipe = _write(tmp_path, "r.yaml", "extends: _f/outer.yaml\n")
    resolved = ExtendsResolver(limits=LIMITS).resolve(recipe)
    assert plain(resolved.root) == {"a": 1, "b": 2}
    inner = tmp_path / "_f/inner.yaml"
    assert resolved.via[inner] == (recipe, tmp_path / "_f/outer.yaml", inner)


def test_cycle_names_the_chain(tmp_path: Path) -> None:
    _write(tmp_path, "a.yaml", "extends: b.yaml\n")
    _write(tmp_path, "b.yaml", "extends: a.yaml\n")
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    with pytest.raises(ExtendsError, match=rf"cycle {a} -> {b} -> {a}"):
        ExtendsResolver(limits=LIMITS).resolve(a)


def test_self_extension_is_a_cycle(tmp_path: Path) -> None:
    a = _write(tmp_path, "a.yaml", "extends: a.yaml\n")
    with pytest.raises(ExtendsError, match="cycle"):
        ExtendsResolver(limits=LIMITS).resolve(a)


def test_missing_fragment(tmp_path: Path) -> None:
    a = _write(tmp_path, "a.yaml", "extends: nope.yaml\n")
    with pytest.raises(ExtendsError, match=r"a.yaml:1:10: extends: fragment .*nope.yaml not found"):
        ExtendsResolver(limits=LIMITS).resolve(a)


@pytest.mark.parametrize("text", ["extends: 3\n", "extends: [a.yaml, {x: 1}]\n", "- a\n", ""])
def test_bad_documents_are_schema_errors(tmp_path: Path, text: str) -> None:
    a = _write(tmp_path, "r.yaml", text)
    with pytest.raises(RecipeSchemaError):
        ExtendsResolver(limits=LIMITS).resolve(a)
