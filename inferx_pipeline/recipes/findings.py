"""Findings: one error or warning about a recipe, with where it is and what to do.

Every problem the loader and the policy rules report is a ``Finding``; its ``str`` is
the one line people read::

    recipes/qwen3.5/fp8-mi300x.yaml:12:7: engine.image: got 'x y'; expected ... [schema]

When the offending value came from a fragment, ``file`` is the fragment and ``chain``
is the ``extends:`` path from the recipe to it, printed after the message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from inferx_pipeline.errors import RecipeError

Severity = Literal["error", "warning"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def printable(text: str) -> str:
    """``text`` with control characters escaped (``\\n``), so a finding stays one line."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


@dataclass(frozen=True, slots=True)
class Location:
    """A position in a YAML file; line and column are 1-based."""

    file: Path
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem: severity, the rule that found it, where, the field path and the message."""

    severity: Severity
    rule: str
    message: str
    location: Location | None = None
    field: str = ""
    chain: tuple[Path, ...] = ()
    recipe: Path | None = None

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def __str__(self) -> str:
        if self.location is not None:
            where = str(self.location)
        elif self.recipe is not None:
            where = str(self.recipe)
        else:
            where = ""
        head = f"{where}: " if where else ""
        head += f"{self.field}: " if self.field else ""
        via = f" (via {' -> '.join(str(p) for p in self.chain)})" if len(self.chain) > 1 else ""
        return printable(f"{head}{self.message} [{self.rule}]{via}")


def raise_for_errors(findings: list[Finding]) -> None:
    """Raise one RecipeError listing every error finding (exit 2); do nothing when none."""
    errors = [str(f) for f in findings if f.is_error]
    if errors:
        raise RecipeError("\n".join(errors))
