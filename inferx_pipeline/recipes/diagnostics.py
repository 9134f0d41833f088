"""Pydantic validation errors -> ``Finding`` lines at the offending YAML node.

A pydantic ``loc`` mixes document keys with union-branch tags (``single-node``,
``int``, ``MaxNumSeqsRule``); walking it against the document keeps only the real
keys, so the field path reads like the YAML (``scenarios.fixed-seq-len[0].search-space[1].tp``)
and the location is that node's, in whichever file (recipe or fragment) it came from.
Union branches that failed on a container are dropped when another branch got deeper,
and errors left on one node merge into one line: ``got X; expected A or B``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, Tag, ValidationError
from pydantic_core import ErrorDetails

from inferx_pipeline.recipes.findings import Finding, Location
from inferx_pipeline.recipes.yamlsource import FieldPath, SourceMap, format_path

# A key people reach for that the format forbids on purpose -> what to write instead.
KEY_HINTS: dict[str, str] = {
    "acceptance-length": (
        "a literal acceptance length is not allowed; set acceptance: synthetic and name a "
        "golden curve with curve: <file stem under golden_al_distribution/>"
    ),
    "synthetic-acceptance-length": "a literal acceptance length is not allowed; name a curve",
    "al": "a literal acceptance length is not allowed; name a golden curve with curve:",
}

_REWRITES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"a valid dictionary or instance of \w+"), "a mapping"),
    (re.compile(r"a valid dictionary"), "a mapping"),
    (re.compile(r"a valid (list|tuple)"), "a list"),
    (re.compile(r", unable to parse string as an? \w+"), ""),
    (re.compile(r", got a number with a fractional part"), ""),
    (re.compile(r"String should match pattern '(.*)'"), r"a string matching \1"),
    (re.compile(r"^String should"), "a string that should"),
)


def _has(node: object, part: int | str) -> bool:
    if isinstance(node, dict):
        return part in node
    return isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)


def _doc_path(loc: tuple[int | str, ...], doc: object) -> tuple[FieldPath, bool]:
    """The document path a pydantic loc points at, and whether a branch tag was skipped last."""
    path: list[str | int] = []
    node = doc
    skipped_last = False
    for part in loc:
        if _has(node, part):
            node = node[part]  # type: ignore[index]  # _has checked the container and key
            path.append(part)
            skipped_last = False
        elif isinstance(node, dict | list):
            skipped_last = True
        else:
            break
    return tuple(path), skipped_last


def _expected(error: ErrorDetails) -> str:
    text = error["msg"].removeprefix("Input should be ").removeprefix("Value error, ")
    for pattern, replacement in _REWRITES:
        text = pattern.sub(replacement, text)
    return text


def _shown(value: object) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class _Problem:
    __slots__ = ("expected", "field", "got", "kind", "on_key")

    def __init__(self, field: FieldPath, kind: str, got: str | None, expected: str, on_key: bool):
        self.field = field
        self.kind = kind
        self.got = got
        self.expected = [expected]
        self.on_key = on_key

    def message(self) -> str:
        if self.kind == "missing":
            return "got no value; expected this required key; add it"
        if self.kind == "extra":
            return self.expected[0]
        if self.kind == "value":
            return "; ".join(self.expected)
        return f"got {self.got}; expected {' or '.join(self.expected)}"


def _problem(
    error: ErrorDetails, doc: object, allowed: Callable[[tuple[int | str, ...]], list[str]]
) -> tuple[_Problem, bool]:
    loc = tuple(error["loc"])
    path, skipped_last = _doc_path(loc, doc)
    kind = error["type"]
    if kind == "missing":
        key = loc[-1]
        return _Problem((*path, key), "missing", None, "", False), False
    if kind == "extra_forbidden":
        key = str(loc[-1])
        valid = allowed(loc[:-1])
        hint = KEY_HINTS.get(key) or (
            f"got an unknown key; expected one of: {', '.join(valid)}; remove or rename it"
            if valid
            else "got an unknown key; expected none here; remove it"
        )
        return _Problem(path, "extra", None, hint, True), False
    if kind == "value_error" or kind == "assertion_error":
        return _Problem(path, "value", None, _expected(error), False), False
    return _Problem(path, "type", _shown(error.get("input")), _expected(error), False), skipped_last


def _collapse(problems: list[tuple[_Problem, bool]]) -> list[_Problem]:
    # A union branch that failed on the container itself loses to a branch that got deeper.
    fields = [p.field for p, _ in problems]
    kept: list[_Problem] = []
    by_field: dict[tuple[FieldPath, str], _Problem] = {}
    for problem, branch in problems:
        deeper = any(
            len(f) > len(problem.field) and f[: len(problem.field)] == problem.field for f in fields
        )
        if branch and deeper:
            continue
        key = (problem.field, problem.kind)
        if key in by_field and problem.kind == "type":
            if problem.expected[0] not in by_field[key].expected:
                by_field[key].expected.append(problem.expected[0])
            continue
        by_field[key] = problem
        kept.append(problem)
    return kept


def _keys_of(model: type[BaseModel]) -> list[str]:
    return sorted(info.alias or name for name, info in model.model_fields.items())


def allowed_keys(root: type[BaseModel]) -> Callable[[tuple[int | str, ...]], list[str]]:
    """A function: pydantic loc of a mapping -> the keys the model at that loc accepts."""

    def models_at(loc: tuple[int | str, ...]) -> list[type[BaseModel]]:
        current: list[Any] = [root]
        for part in loc:
            current = [t for c in current for t in _step(c, part)]
        return [c for c in current if isinstance(c, type) and issubclass(c, BaseModel)]

    def keys(loc: tuple[int | str, ...]) -> list[str]:
        return sorted({k for model in models_at(loc) for k in _keys_of(model)})

    return keys


def _members(tp: Any) -> list[tuple[Any, str | None]]:
    """Union members of ``tp`` with the discriminator tag each carries (None when untagged)."""
    origin = get_origin(tp)
    if origin is Annotated:
        inner, *metadata = get_args(tp)
        tag = next((m.tag for m in metadata if isinstance(m, Tag)), None)
        return [(member, tag or inner_tag) for member, inner_tag in _members(inner)]
    if origin in (Union, UnionType):
        return [m for arg in get_args(tp) for m in _members(arg)]
    return [(tp, None)]


def _step(tp: Any, part: int | str) -> list[Any]:
    """The types one loc ``part`` below ``tp`` (a field, an item, or a union branch)."""
    out: list[Any] = []
    for member, tag in _members(tp):
        origin = get_origin(member)
        if tag is not None and part == tag:
            out.append(member)
        elif isinstance(member, type) and issubclass(member, BaseModel):
            if part == member.__name__:
                out.append(member)
            out.extend(
                info.annotation
                for name, info in member.model_fields.items()
                if part in (name, info.alias)
            )
        elif origin in (tuple, list) and isinstance(part, int):
            out.append(get_args(member)[0])
        elif origin is dict and isinstance(part, str):
            out.append(get_args(member)[1])
    return out


def findings_from_validation(
    err: ValidationError,
    doc: object,
    source: SourceMap,
    *,
    model: type[BaseModel],
    recipe: Path,
    via: dict[Path, tuple[Path, ...]],
) -> list[Finding]:
    """One error Finding per offending node of ``doc``, located through ``source``."""
    allowed = allowed_keys(model)
    raw = [_problem(e, doc, allowed) for e in err.errors()]
    findings = []
    for problem in _collapse(raw):
        location: Location | None = source.locate(problem.field, key=problem.on_key)
        chain = via.get(location.file, (recipe,)) if location is not None else (recipe,)
        findings.append(
            Finding(
                severity="error",
                rule="schema",
                message=problem.message(),
                location=location,
                field=format_path(problem.field),
                chain=chain,
                recipe=recipe,
            )
        )
    return findings
