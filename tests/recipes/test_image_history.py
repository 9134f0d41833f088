"""Image history rows from a recipe's git history, the InferenceX changelog and a registry."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.errors import GitRepoError
from inferx_pipeline.gitrepo import WatchedRepo
from inferx_pipeline.golden import load_golden
from inferx_pipeline.images.changelog import read_changelog
from inferx_pipeline.images.fake import FakeRegistry
from inferx_pipeline.images.tracking import TrackRule
from inferx_pipeline.recipes.image_history import (
    changelog_history,
    git_history,
    image_history,
    registry_history,
)
from inferx_pipeline.recipes.loader import load_recipes
from inferx_pipeline.recipes.schema import Recipe
from tests.gittools import Work, isolate_git
from tests.paths import INFERENCEX, ROOT

FRAGMENT = "recipes/_fragments/engine.yaml"
RECIPE = "recipes/r1.yaml"


def _recipe(image: str, track: dict[str, Any] | None = None, **top: Any) -> Recipe:
    engine: dict[str, Any] = {"framework": "vllm", "image": image}
    if track is not None:
        engine["track"] = track
    return Recipe.model_validate(
        {
            "id": "r1",
            "model": {"hf-id": "openai/gpt-oss-120b", "model-prefix": "gptoss",
                      "precision": "fp4"},
            "sku": "h200",
            "engine": engine,
            "scenarios": {"fixed-seq-len": [
                {"isl": 1024, "osl": 1024, "search-space": [{"tp": 1, "conc-list": [4]}]}
            ]},
            **top,
        }
    )  # fmt: skip


def _doc(image: str | None, extra: str = "") -> str:
    engine = f"  image: {image}\n" if image is not None else ""
    return f"extends: _fragments/engine.yaml\nid: r1\nengine:\n  framework: vllm\n{engine}{extra}"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Work:
    isolate_git(monkeypatch)
    return Work(tmp_path / "repo")


def test_git_history_follows_the_effective_image(work: Work) -> None:
    frag = "engine:\n  image: vllm/vllm-openai:v0.10.2\n"
    c1 = work.commit({FRAGMENT: frag, RECIPE: _doc(None)}, "fragment pins v0.10.2")
    work.commit({RECIPE: _doc(None, "  args: {--x: true}\n")}, "args only: same image")
    c3 = work.commit({RECIPE: _doc("vllm/vllm-openai:v0.11.0")}, "recipe pins its own")
    work.commit({FRAGMENT: "engine:\n  image: vllm/vllm-openai:v0.12.0\n"}, "hidden by recipe")
    c5 = work.commit({RECIPE: _doc(None)}, "back to the fragment's, now v0.12.0")
    work.commit({RECIPE: "engine: [unclosed\n"}, "broken YAML: no evidence")
    c7 = work.commit({RECIPE: _doc("vllm/vllm-openai:v0.13.0")}, "fixed")
    work.commit({"README": "unrelated"}, "not a recipe file")
    rows = git_history(work.path, "r1", [work.path / RECIPE, FRAGMENT])
    assert [(r.image, r.ref) for r in rows] == [
        ("vllm/vllm-openai:v0.13.0", c7),
        ("vllm/vllm-openai:v0.12.0", c5),
        ("vllm/vllm-openai:v0.11.0", c3),
        ("vllm/vllm-openai:v0.10.2", c1),
    ]
    assert {r.source for r in rows} == {"git"} and {r.recipe_id for r in rows} == {"r1"}
    assert rows[-1].when == datetime.fromtimestamp(1_700_003_600, tz=UTC)
    assert [r.when for r in rows] == sorted((r.when for r in rows), reverse=True)  # type: ignore[type-var]


def test_git_history_up_to_a_revision_and_errors(work: Work, tmp_path: Path) -> None:
    c1 = work.commit({RECIPE: "engine:\n  image: a/b:v1\n"})
    work.commit({RECIPE: "engine:\n  image: a/b:v2\n"})
    assert [r.image for r in git_history(work.path, "r1", [RECIPE], rev=c1)] == ["a/b:v1"]
    assert git_history(work.path, "r1", []) == []
    with pytest.raises(GitRepoError, match="not a git repository"):
        git_history(tmp_path, "r1", [RECIPE])


def test_git_history_reads_a_watched_mirror(work: Work, tmp_path: Path) -> None:
    sha = work.commit({RECIPE: "engine:\n  image: a/b:v1\n"})
    watched = WatchedRepo(str(work.path), mirror_dir=tmp_path / "mirrors")
    watched.fetch()
    rows = git_history(watched.mirror, "r1", [RECIPE], rev="refs/heads/main")
    assert [(r.image, r.ref) for r in rows] == [("a/b:v1", sha)]


def test_git_history_of_a_shipped_seed_in_a_copy(work: Work) -> None:
    # The real seed and its fragments, as a loader reports them (relative chain paths).
    catalog = cached_catalog(ROOT / "catalog")
    golden = load_golden(ROOT / "golden_al_distribution")
    seed = ROOT / "recipes/qwen3.8-27b/qwen3.827b-fp8-h200-vllm-mtp.yaml"
    loaded = load_recipes([seed], catalog=catalog, golden=golden).recipes[0]
    files = {str(p.relative_to(ROOT)): p.read_text() for p in loaded.chain}
    sha = work.commit(files)
    rows = git_history(work.path, loaded.recipe.id, [p.relative_to(ROOT) for p in loaded.chain])
    assert [(r.image, r.ref) for r in rows] == [(loaded.recipe.engine.image, sha)]


def test_changelog_history_on_the_real_file() -> None:
    entries = read_changelog(INFERENCEX / "perf-changelog.yaml")
    imported = _recipe(
        "vllm/vllm-openai:v0.22.0",
        **{"imported-from": {"master": "nvidia-master.yaml", "key": "gptoss-fp4-h200-vllm"}},
    )
    rows = changelog_history(imported, entries)
    assert [(r.image, r.ref) for r in rows[:3]] == [
        ("vllm/vllm-openai:v0.21.0", "https://github.com/SemiAnalysisAI/InferenceX/pull/1606"),
        ("vllm/vllm-openai:v0.22.0", "https://github.com/SemiAnalysisAI/InferenceX/pull/1606"),
        ("vllm/vllm-openai:v0.20.2", "https://github.com/SemiAnalysisAI/InferenceX/pull/1400"),
    ]
    # Entries newest first; within one, in the order its description names them.
    assert [(r.image, r.ref) for r in rows[-2:]] == [
        ("vllm/vllm-openai:v0.10.2", "https://github.com/SemiAnalysisAI/InferenceX/pull/159"),
        ("vllm/vllm-openai:v0.11.0", "https://github.com/SemiAnalysisAI/InferenceX/pull/159"),
    ]
    assert {r.source for r in rows} == {"changelog"} and {r.when for r in rows} == {None}
    # The same recipe under its own id only: InferenceX has no entry for "r1".
    assert changelog_history(_recipe("vllm/vllm-openai:v0.22.0"), entries) == []


def test_registry_history_orders_and_filters() -> None:
    fake = FakeRegistry()
    for tag in ("v0.9.0", "v0.11.0", "v0.10.2", "nightly-b", "nightly-a", "latest"):
        fake.push("vllm/vllm-openai", tag)
    rows = registry_history(
        "r1", "vllm/vllm-openai:v0.10.2", TrackRule(tags=("v*", "nightly-*")), fake
    )
    assert [r.image for r in rows] == [
        "vllm/vllm-openai:v0.11.0",
        "vllm/vllm-openai:v0.10.2",
        "vllm/vllm-openai:v0.9.0",
        "vllm/vllm-openai:nightly-a",
        "vllm/vllm-openai:nightly-b",
    ]
    assert [r.ref for r in rows] == [fake.digest("vllm/vllm-openai", r.image[17:]) for r in rows]
    newer = registry_history(
        "r1", "vllm/vllm-openai:v0.10.2", TrackRule(newer_than_pinned=True), fake
    )
    # A backfill may replay any tag a rule without globs runs at, older ones too.
    assert [r.image.split(":")[1] for r in newer] == [
        "v0.11.0", "v0.10.2", "v0.9.0", "latest", "nightly-a", "nightly-b",
    ]  # fmt: skip
    assert [r.image for r in registry_history("r1", "vllm/vllm-openai:v0.9.0", None, fake)] == [
        "vllm/vllm-openai:v0.9.0"
    ]


def test_the_shipped_sglang_seed_runs_at_its_flavour_only() -> None:
    catalog = cached_catalog(ROOT / "catalog")
    golden = load_golden(ROOT / "golden_al_distribution")
    seed = ROOT / "recipes/qwen3.5/qwen3.5-fp8-mi300x-sglang-agentic-mtp.yaml"
    recipe = load_recipes([seed], catalog=catalog, golden=golden).recipes[0].recipe
    fake = FakeRegistry()
    tags = ["v0.5.16-rocm720-mi30x-20260730", "v0.5.16-rocm720-mi30x-20260801",
            "v0.5.17-rocm720-mi30x-20260901", "v0.5.17-rocm720-mi35x-20260901",
            "v0.5.17-cu130", "v0.5.15-rocm720-mi30x-20260601"]  # fmt: skip
    for tag in tags:
        fake.push("lmsysorg/sglang-rocm", tag)
    rows = image_history(recipe, registry=fake)
    assert [(r.source, r.image) for r in rows] == [
        ("pinned", "lmsysorg/sglang-rocm:v0.5.16-rocm720-mi30x-20260730"),
        ("registry", "lmsysorg/sglang-rocm:v0.5.17-rocm720-mi30x-20260901"),
        ("registry", "lmsysorg/sglang-rocm:v0.5.16-rocm720-mi30x-20260801"),
        ("registry", "lmsysorg/sglang-rocm:v0.5.16-rocm720-mi30x-20260730"),
        ("registry", "lmsysorg/sglang-rocm:v0.5.15-rocm720-mi30x-20260601"),
    ]


def test_image_history_joins_every_source(work: Work) -> None:
    sha = work.commit({RECIPE: "engine:\n  image: vllm/vllm-openai:nightly-a\n"})
    fake = FakeRegistry({"vllm/vllm-openai": {"nightly-a": "sha256:" + "a" * 64}})
    fake.push("vllm/vllm-openai", "nightly-b", "sha256:" + "b" * 64)
    recipe = _recipe("vllm/vllm-openai:nightly-a", {"tags": ["nightly-*"]})
    rows = image_history(recipe, repo=work.path, chain=[RECIPE], registry=fake)
    assert [(r.source, r.image, r.ref) for r in rows] == [
        ("pinned", "vllm/vllm-openai:nightly-a", None),
        ("git", "vllm/vllm-openai:nightly-a", sha),
        ("registry", "vllm/vllm-openai:nightly-a", "sha256:" + "a" * 64),
        ("registry", "vllm/vllm-openai:nightly-b", "sha256:" + "b" * 64),
    ]
