"""Selecting jobs: by recipe-id glob, SKU, framework, model family, scenario, concurrency,
new fingerprints.

``Selection`` is the pydantic model behind ``inferx matrix``'s selection flags. Filters of
different kinds combine with AND; values of one filter combine with OR; an empty filter
selects everything. Selections that need the outside world (changed files between git
revisions, the InferenceX changelog, a previous job list) are resolved first, at the
edge (``changes.py``), into ``recipe_ids`` and ``known_fingerprints``.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase

from pydantic import Field, PositiveInt

from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.recipes.scenarios import ScenarioKind
from inferx_pipeline.strict import FrozenModel


class Selection(FrozenModel):
    """Which jobs to keep."""

    recipes: tuple[str, ...] = Field(default=(), description="Recipe-id globs (fnmatch).")
    skus: tuple[str, ...] = Field(default=(), description="Catalog SKU ids.")
    frameworks: tuple[str, ...] = Field(default=(), description="Engine frameworks.")
    families: tuple[str, ...] = Field(default=(), description="Model families (model-prefix).")
    scenarios: tuple[ScenarioKind, ...] = Field(default=(), description="Scenario kinds.")
    concurrencies: tuple[PositiveInt, ...] = Field(
        default=(), description="Concurrencies: a job whose conc is one of them."
    )
    recipe_ids: frozenset[str] | None = Field(
        default=None,
        description="Exact recipe ids (resolved from changed files or the changelog); "
        "None = no such restriction.",
    )
    known_fingerprints: frozenset[str] | None = Field(
        default=None,
        description="Fingerprints of a previous job list: keep only jobs not in it; "
        "None = no such restriction.",
    )

    def keeps(self, job: BenchmarkJob) -> bool:
        """True when ``job`` passes every filter."""
        checks = (
            not self.recipes or any(fnmatchcase(job.recipe_id, g) for g in self.recipes),
            not self.skus or job.sku in self.skus,
            not self.frameworks or job.engine.framework in self.frameworks,
            not self.families or job.model.family in self.families,
            not self.scenarios or job.scenario in self.scenarios,
            not self.concurrencies or job.conc in self.concurrencies,
            self.recipe_ids is None or job.recipe_id in self.recipe_ids,
            self.known_fingerprints is None or job.fingerprint not in self.known_fingerprints,
        )
        return all(checks)


def select(jobs: Sequence[BenchmarkJob], selection: Selection) -> list[BenchmarkJob]:
    """The jobs ``selection`` keeps, in their original order."""
    return [job for job in jobs if selection.keeps(job)]
