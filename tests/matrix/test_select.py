"""Selection filters, and the edge resolvers: git changed files, changelog globs, job diffs."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.errors import MatrixError
from inferx_pipeline.golden import GoldenRegistry
from inferx_pipeline.matrix import changes
from inferx_pipeline.matrix.expand import expand
from inferx_pipeline.matrix.select import Selection, select
from inferx_pipeline.recipes.loader import load_recipes
from inferx_pipeline.recipes.schema import Recipe
from tests.paths import INFERENCEX


def test_filters_combine(
    make_recipe: Callable[..., Recipe], golden: GoldenRegistry, catalog: Catalog
) -> None:
    sglang = make_recipe(
        id="dsr1-b", engine={"framework": "sglang", "image": "lmsysorg/sglang:v0.5"}
    )
    jobs = expand([make_recipe(id="dsr1-a"), sglang], golden=golden, catalog=catalog)
    assert {j.recipe_id for j in select(jobs, Selection(recipes=("dsr1-*",)))} == {
        "dsr1-a",
        "dsr1-b",
    }
    assert {j.recipe_id for j in select(jobs, Selection(frameworks=("sglang",)))} == {"dsr1-b"}
    assert select(jobs, Selection(skus=("mi300x",))) == []
    assert select(jobs, Selection(scenarios=("agentic-coding",))) == []
    assert len(select(jobs, Selection(families=("dsr1",), recipe_ids=frozenset({"dsr1-a"})))) == 6
    known = frozenset({jobs[0].fingerprint})
    assert {j.recipe_id for j in select(jobs, Selection(known_fingerprints=known))} == {"dsr1-b"}
    levels = sorted({j.conc for j in jobs})
    picked = select(jobs, Selection(recipes=("dsr1-a",), concurrencies=(levels[0], levels[-1])))
    assert {j.conc for j in picked} == {levels[0], levels[-1]}
    assert {j.recipe_id for j in picked} == {"dsr1-a"}
    assert select(jobs, Selection(concurrencies=(max(levels) + 1,))) == []


def test_changelog_globs_select_recipe_ids() -> None:
    globs = changes.changelog_globs(INFERENCEX / "perf-changelog.yaml", last=772)
    assert "dsr1*" in globs
    ids = changes.matching_ids(["dsr1-fp8-h200-trt", "qwen3.5-x"], ["dsr1*"])
    assert ids == frozenset({"dsr1-fp8-h200-trt"})


def test_known_fingerprints_reads_matrix_json(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    path.write_text(json.dumps([{"fingerprint": "abc"}]))
    assert changes.known_fingerprints(path) == frozenset({"abc"})
    path.write_text("{}")
    with pytest.raises(MatrixError, match="cannot read a previous job list"):
        changes.known_fingerprints(path)


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


RECIPE = """\
extends: ../_fragments/base.yaml
id: {id}
model: {{hf-id: Qwen/Qwen3.5-397B-A17B-FP8, model-prefix: qwen3.5, precision: fp8, thinking: on}}
speculative: {{method: mtp, draft-tokens: 3, acceptance: {acceptance}, curve: qwen3.5_mtp}}
scenarios:
  fixed-seq-len:
    - {{isl: 1024, osl: 1024, search-space: [{{tp: 8, conc-list: [4]}}]}}
"""


def test_changed_files_map_to_recipes(
    tmp_path: Path, golden: GoldenRegistry, catalog: Catalog
) -> None:
    repo = tmp_path
    (repo / "recipes" / "q").mkdir(parents=True)
    (repo / "recipes" / "_fragments").mkdir()
    (repo / "golden").mkdir()
    (repo / "recipes" / "_fragments" / "base.yaml").write_text(
        "sku: h200\nengine: {framework: vllm, image: 'vllm/vllm-openai:v1'}\n"
    )
    (repo / "recipes" / "q" / "a.yaml").write_text(RECIPE.format(id="a", acceptance="synthetic"))
    (repo / "recipes" / "q" / "b.yaml").write_text(RECIPE.format(id="b", acceptance="real"))
    (repo / "golden" / "qwen3.5_mtp.yaml").write_text("x: 1\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "one")
    loaded = load_recipes([repo / "recipes"], catalog=catalog, golden=golden, run_policy=False)
    assert not loaded.errors, loaded.errors

    def affected(*paths: str) -> frozenset[str]:
        for p in paths:
            (repo / p).write_text((repo / p).read_text() + "# touched\n")
        _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "touch")
        files = changes.changed_files(repo, "HEAD~1", "HEAD")
        return changes.affected_recipes(files, loaded.recipes, repo / "golden")

    assert affected("recipes/q/b.yaml") == {"b"}
    assert affected("golden/qwen3.5_mtp.yaml") == {"a"}  # only a is synthetic on that curve
    assert affected("recipes/_fragments/base.yaml") == {"a", "b"}
    with pytest.raises(MatrixError, match="git diff --name-only nope HEAD failed"):
        changes.changed_files(repo, "nope", "HEAD")
