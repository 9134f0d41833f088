"""The jobs a PR's diff changes: added seed recipes, fragments, golden curves, broken
recipes, and an InferenceX tree's added changelog entries."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from inferx_pipeline.errors import PullRequestError, RecipeError
from inferx_pipeline.prs.scope import pr_scope, tree_layout
from tests.paths import INFERENCEX, ROOT
from tests.prs.conftest import SEEDS

CHANGELOG = (INFERENCEX / "perf-changelog.yaml").read_text()
NEW_ENTRY = """
- config-keys:
    - {key}
  description:
    - "Bump the image"
  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/XXX
"""


def _recipe_id(path: str) -> str:
    return Path(path).stem


@pytest.mark.parametrize("added", sorted(SEEDS))
def test_an_added_seed_recipe_is_the_scope(added: str, make_tree: Callable[[str], Path]) -> None:
    base, head = make_tree("base"), make_tree("head")
    (base / added).unlink()
    assert tree_layout(head) == "recipes"
    assert pr_scope(base, []).jobs == ()

    scope = pr_scope(head, [added])

    assert scope.recipe_ids == (_recipe_id(added),)
    assert scope.recipes[0].sources == (added,)
    assert scope.recipe_files == (head / added,)
    assert len(scope.jobs) == SEEDS[added]
    assert {job.recipe_id for job in scope.jobs} == {_recipe_id(added)}
    assert scope.config_keys == ()


def test_a_deleted_recipe_runs_nothing(make_tree: Callable[[str], Path]) -> None:
    removed = "recipes/qwen3.5/qwen3.5-fp8-mi300x-sglang-agentic-mtp.yaml"
    head = make_tree("head")
    (head / removed).unlink()
    scope = pr_scope(head, [removed])
    assert (scope.recipes, scope.jobs) == ((), ())


def test_a_fragment_change_affects_every_recipe_extending_it(head_tree: Path) -> None:
    fragment = "recipes/_fragments/engines/vllm-rocm.yaml"
    scope = pr_scope(head_tree, [fragment, "README.md"])
    assert scope.recipe_ids == (
        "minimaxm3-fp8-mi325x-vllm-agentic-mtp",
        "qwen3.827b-bf16-mi325x-vllm-mtp",
    )
    assert all(item.sources == (fragment,) for item in scope.recipes)
    assert len(scope.jobs) == 23 + 8


def test_a_model_fragment_and_a_recipe_name_both_sources(head_tree: Path) -> None:
    fragment = "recipes/_fragments/models/qwen3.8-27b.yaml"
    recipe = "recipes/qwen3.8-27b/qwen3.827b-fp8-h200-vllm-mtp.yaml"
    scope = pr_scope(head_tree, [recipe, fragment])
    sources = {item.recipe_id: item.sources for item in scope.recipes}
    assert sources == {
        "qwen3.827b-bf16-mi325x-vllm-mtp": (fragment,),
        "qwen3.827b-fp8-h200-vllm-mtp": (recipe, fragment),
    }
    assert len(scope.jobs) == 16


def test_a_golden_curve_change_affects_its_synthetic_recipes(head_tree: Path) -> None:
    scope = pr_scope(head_tree, ["golden_al_distribution/qwen3.5_mtp.yaml"])
    assert scope.recipe_ids == ("qwen3.5-fp8-mi300x-sglang-agentic-mtp",)
    assert len(scope.jobs) == 9
    # The FP8 H200 recipe measures real acceptance: the curve does not reach it.
    scope = pr_scope(head_tree, ["golden_al_distribution/qwen3.8-27b_mtp.yaml"])
    assert scope.recipe_ids == ("qwen3.827b-bf16-mi325x-vllm-mtp",)


def test_a_change_elsewhere_runs_nothing(head_tree: Path) -> None:
    scope = pr_scope(head_tree, ["README.md", "inferx_pipeline/cli/__init__.py"])
    assert (scope.recipes, scope.jobs) == ((), ())


def test_eval_mode_reaches_the_matrix(head_tree: Path) -> None:
    recipe = "recipes/dsr1/dsr1-fp8-mi355x-atom.yaml"
    counts = {
        evals: [job.run_eval for job in pr_scope(head_tree, [recipe], evals=evals).jobs]
        for evals in ("default", "evals-only", "all")
    }
    assert {evals: (len(flags), sum(flags)) for evals, flags in counts.items()} == {
        "default": (8, 2),
        "evals-only": (8, 2),
        "all": (12, 6),
    }


def test_a_broken_changed_recipe_is_a_recipe_error(make_tree: Callable[[str], Path]) -> None:
    head = make_tree("head")
    seed = "recipes/qwen3.5/qwen3.5-fp8-mi300x-sglang-agentic-mtp.yaml"
    broken = head / "recipes/qwen3.5/qwen3.5-copy.yaml"
    text = (ROOT / seed).read_text().replace("id: qwen3.5-fp8", "id: copy-qwen3.5-fp8")
    broken.write_text(text.replace("scenarios:", "scenarioz:"))
    with pytest.raises(RecipeError, match=r"qwen3\.5-copy\.yaml"):
        pr_scope(head, ["recipes/qwen3.5/qwen3.5-copy.yaml"])
    # Broken, but not touched by the diff: another PR's problem.
    assert pr_scope(head, [seed]).recipe_ids == ("qwen3.5-fp8-mi300x-sglang-agentic-mtp",)


def test_added_changelog_entries_select_recipes_by_id(head_tree: Path) -> None:
    head = CHANGELOG + NEW_ENTRY.format(key="qwen3.827b-*")
    scope = pr_scope(
        head_tree, ["perf-changelog.yaml"], changelog_base=CHANGELOG, changelog_head=head
    )
    assert scope.config_keys == ("qwen3.827b-*",)
    assert scope.recipe_ids == ("qwen3.827b-bf16-mi325x-vllm-mtp", "qwen3.827b-fp8-h200-vllm-mtp")
    assert {item.sources for item in scope.recipes} == {("perf-changelog.yaml",)}


def _last_entry_removed() -> str:
    lines = CHANGELOG.splitlines(keepends=True)
    last = max(i for i, line in enumerate(lines) if line.startswith("- config-keys:"))
    return "".join(lines[:last])


def test_an_inferencex_tree_runs_the_configs_of_added_entries() -> None:
    assert tree_layout(INFERENCEX) == "inferencex"
    scope = pr_scope(
        INFERENCEX,
        ["perf-changelog.yaml", "benchmarks/single_node/dsv4_fp4_b200_vllm.sh"],
        changelog_base=_last_entry_removed(),
        changelog_head=CHANGELOG,
        catalog_dir=ROOT / "catalog",
    )
    assert scope.layout == "inferencex"
    assert scope.config_keys == ("dsv4-fp4-b200-vllm-agentic-mtp",)
    assert scope.recipe_ids == ("dsv4-fp4-b200-vllm-agentic-mtp",)
    assert scope.recipe_files == ()
    # The entry names scenario-type agentic-coding: only those jobs run.
    assert scope.jobs and {job.scenario for job in scope.jobs} == {"agentic-coding"}
    assert {job.recipe_id for job in scope.jobs} == {"dsv4-fp4-b200-vllm-agentic-mtp"}
    # TP8 [1, 4, 8, 14] and the DEP8 arm's concurrencies, plus the policy's default evals.
    assert {job.conc for job in scope.jobs if job.label.startswith("tp8")} >= {1, 4, 8, 14}


def test_an_inferencex_glob_expands_to_every_matching_config() -> None:
    head = CHANGELOG + NEW_ENTRY.format(key="dsr1-fp8-h200-*")
    scope = pr_scope(
        INFERENCEX,
        ["perf-changelog.yaml"],
        changelog_base=CHANGELOG,
        changelog_head=head,
        catalog_dir=ROOT / "catalog",
    )
    assert scope.config_keys == ("dsr1-fp8-h200-*",)
    assert len(scope.recipe_ids) > 1
    assert all(key.startswith("dsr1-fp8-h200-") for key in scope.recipe_ids)
    assert {job.recipe_id for job in scope.jobs} == set(scope.recipe_ids)


def test_an_inferencex_key_matching_no_config_is_an_error() -> None:
    head = CHANGELOG + NEW_ENTRY.format(key="dsr9-*")
    with pytest.raises(PullRequestError, match=r"config key 'dsr9-\*' matches no entry"):
        pr_scope(
            INFERENCEX,
            ["perf-changelog.yaml"],
            changelog_base=CHANGELOG,
            changelog_head=head,
            catalog_dir=ROOT / "catalog",
        )


def test_an_inferencex_changelog_with_a_deleted_line_is_an_error() -> None:
    lines = CHANGELOG.splitlines(keepends=True)
    head = "".join(lines[:10] + lines[11:])
    with pytest.raises(PullRequestError, match=r"perf-changelog\.yaml:11: .*append-only"):
        pr_scope(
            INFERENCEX,
            ["perf-changelog.yaml"],
            changelog_base=CHANGELOG,
            changelog_head=head,
            catalog_dir=ROOT / "catalog",
        )


def test_an_inferencex_tree_needs_the_changelog_only_when_it_changed() -> None:
    assert pr_scope(INFERENCEX, ["configs/nvidia-master.yaml"]).jobs == ()
    with pytest.raises(PullRequestError, match="changelog_base and changelog_head"):
        pr_scope(INFERENCEX, ["perf-changelog.yaml"])


def test_changelog_versions_may_come_as_bytes(head_tree: Path) -> None:
    head = (CHANGELOG + NEW_ENTRY.format(key="qwen3.5-*")).encode()
    scope = pr_scope(
        head_tree, ["perf-changelog.yaml"], changelog_base=CHANGELOG.encode(), changelog_head=head
    )
    assert scope.recipe_ids == ("qwen3.5-fp8-mi300x-sglang-agentic-mtp",)
    with pytest.raises(PullRequestError, match=r"perf-changelog\.yaml \(head version\): not UTF-8"):
        pr_scope(head_tree, [], changelog_base=CHANGELOG, changelog_head=head + b"\xff")
