"""The entries a pull request adds to InferenceX's ``perf-changelog.yaml``.

The changelog is append-only: every non-blank line of the base version must still be in
the head version, in order, and every base entry unchanged; a PR only adds entries.
InferenceX's PR gate (``utils/validate_perf_changelog.py``) wants them at the very end
of the base file, but on its main branch about one changelog commit in five (40 of the
last 200 first-parent commits at 843c6254) lands its entry before entries merged after
the PR branched, so an entry inserted between others counts as added here too. Blank
lines may go, as InferenceX's ``utils/process_changelog.py`` allows.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

import yaml
from pydantic import ValidationError

from inferx_pipeline.errors import PullRequestError
from inferx_pipeline.images.changelog import ChangelogEntry

CHANGELOG_FILE = "perf-changelog.yaml"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def added_entries(base: str, head: str, *, name: str = CHANGELOG_FILE) -> list[ChangelogEntry]:
    """The entries ``head`` adds to ``base`` (two versions of the changelog), in file order.

    Raises PullRequestError naming the line (``name:N``) when a base line was deleted or
    changed, or an existing entry was edited, and naming the entry when an added one is
    not a valid changelog entry.
    """
    base_lines, head_lines = base.splitlines(), head.splitlines()
    if head_lines[: len(base_lines)] != base_lines and not _kept(base_lines, head_lines):
        number, text = _first_lost(base_lines, head_lines)
        raise PullRequestError(
            f"{name}:{number}: line deleted or changed: {text!r}; the changelog is "
            "append-only: restore the base version's lines byte for byte and add new "
            "entries after them"
        )
    old, new = _entries(base, name, "base"), _entries(head, name, "head")
    added: list[ChangelogEntry] = []
    at = 0
    for line, entry in old:
        while at < len(new) and new[at][1] != entry:
            added.append(_entry(new[at], name))
            at += 1
        if at == len(new):
            raise PullRequestError(
                f"{name}:{line}: the entry starting here was edited; the changelog is "
                "append-only: restore it as on the base branch and describe the change in "
                "a new entry"
            )
        at += 1
    added.extend(_entry(item, name) for item in new[at:])
    return added


def _kept(base: Sequence[str], head: Sequence[str]) -> bool:
    """True when every non-blank line of ``base`` is in ``head``, in order (greedy match)."""
    lines = iter(head)
    return all(any(line == kept for kept in lines) for line in base if line.strip())


def _first_lost(base: Sequence[str], head: Sequence[str]) -> tuple[int, str]:
    """(1-based line number, text) of the first non-blank base line the diff loses."""
    matcher = difflib.SequenceMatcher(a=base, b=head, autojunk=False)
    for tag, start, end, _, _ in matcher.get_opcodes():
        if tag in ("delete", "replace"):
            for index in range(start, end):
                if base[index].strip():
                    return index + 1, base[index]
    # difflib's alignment always loses a line when the greedy match did; kept for safety.
    return len(base), base[-1] if base else ""


def _entries(text: str, name: str, version: str) -> list[tuple[int, Any]]:
    """(1-based start line, plain data) of each top-level entry of one changelog version."""
    loader = _LOADER(text)
    try:
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else []
    except yaml.YAMLError as err:
        raise PullRequestError(
            f"{name} ({version} version): not valid YAML: {err}; expected a list of "
            "changelog entries"
        ) from err
    finally:
        loader.dispose()
    if root is None:
        return []
    if not isinstance(root, yaml.SequenceNode):
        raise PullRequestError(
            f"{name}:{root.start_mark.line + 1} ({version} version): the top level is not a "
            "list; expected a list of changelog entries"
        )
    return [(node.start_mark.line + 1, item) for node, item in zip(root.value, data, strict=True)]


def _entry(item: tuple[int, Any], name: str) -> ChangelogEntry:
    line, data = item
    try:
        return ChangelogEntry.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "entry"
        raise PullRequestError(
            f"{name}:{line}: added entry: {where}: {first['msg']}; expected config-keys, "
            "description and pr-link (InferenceX perf-changelog.yaml)"
        ) from err
