"""Entries a PR adds to InferenceX's append-only perf-changelog.yaml, on the real file."""

from __future__ import annotations

import pytest

from inferx_pipeline.errors import PullRequestError
from inferx_pipeline.prs.changelog import added_entries
from tests.paths import INFERENCEX

NEW_ENTRY = """\
- config-keys:
    - dsr1-fp8-h200-sglang
    - qwen3.5-*-mi355x-*
  description:
    - "Bump the image"
  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/XXX
"""


@pytest.fixture(scope="module")
def real() -> str:
    return (INFERENCEX / "perf-changelog.yaml").read_text()


def _entry_starts(text: str) -> list[int]:
    return [i for i, line in enumerate(text.splitlines(keepends=True)) if line.startswith("- ")]


def test_an_entry_appended_at_the_end_is_added(real: str) -> None:
    added = added_entries(real, f"{real}\n{NEW_ENTRY}")
    assert [entry.config_keys for entry in added] == [
        ("dsr1-fp8-h200-sglang", "qwen3.5-*-mi355x-*")
    ]


def test_the_real_files_last_entry_counts_as_added_to_the_rest(real: str) -> None:
    lines = real.splitlines(keepends=True)
    base = "".join(lines[: _entry_starts(real)[-1]])
    added = added_entries(base, real)
    assert [entry.config_keys for entry in added] == [("dsv4-fp4-b200-vllm-agentic-mtp",)]
    assert added[0].pr_link.endswith("/pull/2707")


def test_an_entry_inserted_between_others_is_added(real: str) -> None:
    # InferenceX's main branch lands about one changelog commit in five this way.
    lines = real.splitlines(keepends=True)
    at = _entry_starts(real)[100]
    head = "".join(lines[:at]) + NEW_ENTRY + "\n" + "".join(lines[at:])
    assert [e.config_keys[0] for e in added_entries(real, head)] == ["dsr1-fp8-h200-sglang"]


def test_no_change_adds_nothing_and_blank_lines_may_go(real: str) -> None:
    assert added_entries(real, real) == []
    assert added_entries(real, real.replace("\n\n- config-keys", "\n- config-keys", 3)) == []


def test_a_deleted_line_is_an_error_naming_it(real: str) -> None:
    lines = real.splitlines(keepends=True)
    number = 1 + next(i for i, line in enumerate(lines) if "pull/2685" in line)
    head = "".join(lines[: number - 1] + lines[number:]) + "\n" + NEW_ENTRY
    with pytest.raises(PullRequestError) as caught:
        added_entries(real, head)
    text = lines[number - 1].rstrip("\n")
    assert str(caught.value).startswith(
        f"perf-changelog.yaml:{number}: line deleted or changed: {text!r}; "
        "the changelog is append-only"
    )


def test_a_changed_line_is_an_error_naming_it(real: str) -> None:
    lines = real.splitlines(keepends=True)
    assert "uplift" in lines[4]
    lines[4] = lines[4].replace("uplift", "gain")
    with pytest.raises(PullRequestError, match=r"perf-changelog\.yaml:5: line deleted or changed"):
        added_entries(real, "".join(lines))


def test_a_line_added_inside_an_old_entry_is_an_edit(real: str) -> None:
    lines = real.splitlines(keepends=True)
    lines.insert(3, '    - "Also faster"\n')
    with pytest.raises(PullRequestError) as caught:
        added_entries(real, "".join(lines))
    assert str(caught.value).startswith("perf-changelog.yaml:1: the entry starting here was edited")


def test_an_invalid_added_entry_names_its_line_and_field(real: str) -> None:
    head = f"{real}\n{NEW_ENTRY.replace('  pr-link', '  pr-url')}"
    line = len(real.splitlines()) + 2
    with pytest.raises(PullRequestError, match=rf"perf-changelog\.yaml:{line}: added entry: pr-"):
        added_entries(real, head)


def test_a_new_changelog_adds_every_entry() -> None:
    assert len(added_entries("", NEW_ENTRY + "\n" + NEW_ENTRY)) == 2
