"""Shared fixtures for the PR tests: the label rules, copies of the repository's tree."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from inferx_pipeline.prs.labels import LabelRules, load_label_rules
from tests.gittools import isolate_git
from tests.paths import ROOT
from tests.prs.pulls import OWNER, REPO, TOKEN, Forge
from tests.services.forge_standin import ForgeStandin
from tests.services.git_http import ServedRepo

# The four seed recipes (scripts/demo's SEEDS), by path, and their job counts (default evals).
SEEDS = {
    "recipes/qwen3.8-27b/qwen3.827b-bf16-mi325x-vllm-mtp.yaml": 8,
    "recipes/qwen3.5/qwen3.5-fp8-mi300x-sglang-agentic-mtp.yaml": 9,
    "recipes/qwen3.8-27b/qwen3.827b-fp8-h200-vllm-mtp.yaml": 8,
    "recipes/minimaxm3/minimaxm3-fp8-mi325x-vllm-agentic-mtp.yaml": 23,
}
# What a head tree of this project's layout holds.
TREE_DIRS = ("recipes", "golden_al_distribution", "catalog")


@pytest.fixture(scope="session")
def rules() -> LabelRules:
    return load_label_rules(ROOT / "catalog")


def copy_tree(to: Path) -> Path:
    """A copy of the repository's recipes, golden curves and catalog under ``to``."""
    for name in TREE_DIRS:
        shutil.copytree(ROOT / name, to / name)
    return to


@pytest.fixture(scope="session")
def head_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One read-only head tree shared by the tests that change nothing in it."""
    return copy_tree(tmp_path_factory.mktemp("head"))


@pytest.fixture
def make_tree(tmp_path: Path) -> Callable[[str], Path]:
    """A fresh copy of the tree in ``tmp_path/<name>``, for tests that change it."""
    return lambda name: copy_tree(tmp_path / name)


@pytest.fixture
def forge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Forge]:
    """A served recipe repository and the GitHub stand-in (with a token: reports post)."""
    isolate_git(monkeypatch)
    with ServedRepo(tmp_path / "served") as served, ForgeStandin(OWNER, REPO, token=TOKEN) as gh:
        monkeypatch.setenv("INFERX_ROOT", str(tmp_path / "root"))  # smoke_root's validity
        yield Forge(served, gh, tmp_path)
