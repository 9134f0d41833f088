"""What every policy rule sees (``RuleContext``) and how it reports (``finding``).

A rule is a pure function ``RuleContext -> list[Finding]``; ``RuleContext.where``
(a loaded recipe, or None for a recipe built in code) turns field paths into
``file:line:col`` locations in the right recipe or fragment file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.golden import GoldenRegistry
from inferx_pipeline.recipes.findings import Finding, Location, Severity
from inferx_pipeline.recipes.policy.data import PolicyData
from inferx_pipeline.recipes.scenarios import AgenticCoding, FixedSeqLen, SearchSpaceRow
from inferx_pipeline.recipes.schema import Recipe
from inferx_pipeline.recipes.yamlsource import FieldPath, format_path


class Where(Protocol):
    """Where a recipe's values live (``LoadedRecipe`` implements it)."""

    @property
    def source(self) -> Path: ...

    def locate(self, path: FieldPath, *, key: bool = False) -> Location | None: ...

    def chain_to(self, location: Location | None) -> tuple[Path, ...]: ...


@dataclass(frozen=True, slots=True)
class RuleContext:
    """A recipe, the data the rules read, and where the recipe's values live."""

    recipe: Recipe
    catalog: Catalog
    golden: GoldenRegistry
    data: PolicyData
    where: Where | None

    def finding(
        self, rule: str, path: FieldPath, message: str, severity: Severity = "error"
    ) -> Finding:
        """A finding of ``rule`` at field ``path`` of this recipe."""
        location = self.where.locate(path) if self.where is not None else None
        return Finding(
            severity=severity,
            rule=rule,
            message=message,
            location=location,
            field=format_path(path),
            chain=self.where.chain_to(location) if self.where is not None else (),
            recipe=self.where.source if self.where is not None else None,
        )


Rule = Callable[[RuleContext], list[Finding]]


@dataclass(frozen=True, slots=True)
class RowRef:
    """One search-space row with its block and its field path in the recipe."""

    kind: str
    block: FixedSeqLen | AgenticCoding
    row: SearchSpaceRow
    path: FieldPath

    def describe(self) -> str:
        """Short human name of the row, e.g. ``agentic-coding[0].search-space[1] (tp8)``."""
        tp = getattr(self.row, "tp", None)
        shape = f" (tp{tp}, conc {list(self.row.concurrencies())})" if tp is not None else ""
        return f"{format_path(self.path[1:])}{shape}"


def rows(recipe: Recipe) -> Iterator[RowRef]:
    """Every search-space row of ``recipe`` in document order, with its field path."""
    blocks: list[tuple[str, int, FixedSeqLen | AgenticCoding]] = [
        *(("fixed-seq-len", b, block) for b, block in enumerate(recipe.scenarios.fixed_seq_len)),
        *(("agentic-coding", b, block) for b, block in enumerate(recipe.scenarios.agentic_coding)),
    ]
    for kind, b, block in blocks:
        for r, row in enumerate(block.search_space):
            yield RowRef(kind, block, row, ("scenarios", kind, b, "search-space", r))
