"""PR labels -> mode: each primary label, conflicts, skip, unlabeled, modifiers, the loader."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from inferx_pipeline.errors import CatalogError, PullRequestError
from inferx_pipeline.prs.labels import LabelRules, PrIdle, PrRun, load_label_rules, pr_mode
from tests.paths import ROOT

# InferenceX's behaviour per primary label (run-sweep.yml @ 843c6254): canary, fail-fast, trim.
PRIMARIES = {
    "sweep-enabled": (False, False, "lowest-concurrency"),
    "full-sweep-fail-fast": (True, True, "none"),
    "full-sweep-enabled": (True, False, "none"),
    "full-sweep-fail-fast-no-canary": (False, True, "none"),
    "non-canary-full-sweep-enabled": (False, False, "none"),
}


def _run(labels: list[str], rules: LabelRules, message: str = "Bump the image") -> PrRun:
    mode = pr_mode(labels, message, rules)
    assert isinstance(mode, PrRun), mode
    return mode


@pytest.mark.parametrize("label", sorted(PRIMARIES))
def test_each_primary_label_runs_its_behaviour(label: str, rules: LabelRules) -> None:
    mode = _run([label], rules)
    assert (mode.label, mode.modifiers) == (label, ())
    assert (mode.canary, mode.fail_fast, mode.trim) == PRIMARIES[label]
    assert (mode.evals_only, mode.all_evals, mode.matrix_evals) == (False, False, "default")


def test_the_catalog_names_exactly_inferencex_labels(rules: LabelRules) -> None:
    assert set(rules.primaries) == set(PRIMARIES)
    assert set(rules.modifiers) == {"evals-only", "all-evals"}
    assert rules.names == set(PRIMARIES) | {"evals-only", "all-evals"}
    assert rules.skip_marker == "[skip-sweep]"
    assert "843c6254ff69b567f772f6a5fd97675af3d04431" in rules.source


def test_two_primary_labels_fail_naming_both(rules: LabelRules) -> None:
    with pytest.raises(PullRequestError) as caught:
        pr_mode(["full-sweep-enabled", "bug", "sweep-enabled"], "msg", rules)
    message = str(caught.value)
    assert "sweep-enabled, full-sweep-enabled" in message
    assert "2 primary sweep labels" in message and "remove all but one" in message


def test_three_primary_labels_name_all_even_with_the_skip_marker(rules: LabelRules) -> None:
    labels = ["non-canary-full-sweep-enabled", "full-sweep-fail-fast", "sweep-enabled"]
    with pytest.raises(PullRequestError) as caught:
        pr_mode(labels, "WIP [skip-sweep]", rules)
    assert all(label in str(caught.value) for label in labels)


def test_no_primary_label_is_a_value_with_the_bots_advice(rules: LabelRules) -> None:
    mode = pr_mode(["evals-only", "documentation"], "msg", rules)
    assert isinstance(mode, PrIdle)
    assert mode.kind == "unlabeled"
    assert mode.reason.startswith("Sweeps only run on labeled PRs. Add `full-sweep-fail-fast`")


def test_skip_marker_in_the_head_message_skips(rules: LabelRules) -> None:
    mode = pr_mode(["full-sweep-fail-fast"], "Fix a typo\n\n[skip-sweep]\n", rules)
    assert isinstance(mode, PrIdle)
    assert mode.kind == "skip"
    assert "[skip-sweep]" in mode.reason


def test_skip_marker_must_be_written_whole(rules: LabelRules) -> None:
    assert _run(["full-sweep-fail-fast"], rules, "skip-sweep, please").label == (
        "full-sweep-fail-fast"
    )


def test_labels_that_are_not_ours_are_ignored(rules: LabelRules) -> None:
    mode = _run(["bug", "full-sweep-enabled", "ci-patchwork", "agentx-fast"], rules)
    assert (mode.label, mode.modifiers) == ("full-sweep-enabled", ())
    assert isinstance(pr_mode(["bug", "enhancement"], "msg", rules), PrIdle)


@pytest.mark.parametrize(
    ("modifiers", "evals_only", "all_evals", "matrix_evals"),
    [
        (["evals-only"], True, False, "evals-only"),
        (["all-evals"], False, True, "all"),
        (["all-evals", "evals-only"], True, True, "all"),
    ],
)
def test_modifiers_set_eval_handling(
    modifiers: list[str], evals_only: bool, all_evals: bool, matrix_evals: str, rules: LabelRules
) -> None:
    mode = _run(["full-sweep-fail-fast", *modifiers], rules)
    assert mode.modifiers == tuple(m for m in ("evals-only", "all-evals") if m in modifiers)
    assert (mode.evals_only, mode.all_evals, mode.matrix_evals) == (
        evals_only,
        all_evals,
        matrix_evals,
    )
    assert (mode.canary, mode.fail_fast) == (True, True)  # the primary label still rules


def _write_rules(tmp_path: Path, change: dict[str, object]) -> Path:
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    doc = yaml.safe_load((ROOT / "catalog" / "pr-labels.yaml").read_text())
    doc["labels"]["sweep-enabled"].update(change)
    (catalog / "pr-labels.yaml").write_text(yaml.safe_dump(doc))
    return catalog


def test_loader_error_names_the_file_and_field(tmp_path: Path) -> None:
    catalog = _write_rules(tmp_path, {"trim": "lowest"})
    with pytest.raises(CatalogError) as caught:
        load_label_rules(catalog)
    message = str(caught.value)
    assert message.startswith(f"{catalog / 'pr-labels.yaml'}: invalid pull-request label rules")
    assert "labels.sweep-enabled.primary.trim" in message
    assert "'lowest-concurrency' or 'none'" in message


def test_loader_rejects_unknown_keys_and_kinds(tmp_path: Path) -> None:
    catalog = _write_rules(tmp_path, {"kind": "secondary"})
    with pytest.raises(CatalogError, match=r"labels\.sweep-enabled"):
        load_label_rules(catalog)
    shutil.rmtree(catalog)
    catalog = _write_rules(tmp_path, {"canary-first": True})
    with pytest.raises(CatalogError, match=r"labels\.sweep-enabled\.primary\.canary-first"):
        load_label_rules(catalog)


def test_loader_needs_a_primary_label(tmp_path: Path) -> None:
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    doc = yaml.safe_load((ROOT / "catalog" / "pr-labels.yaml").read_text())
    doc["labels"] = {k: v for k, v in doc["labels"].items() if v["kind"] == "modifier"}
    (catalog / "pr-labels.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(CatalogError, match="no label of kind primary"):
        load_label_rules(catalog)
