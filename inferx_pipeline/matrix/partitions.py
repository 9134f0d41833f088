"""Sweep partitions: cells of (SKU, concurrency, image) and the jobs each one holds.

A SKU's sweep is partitioned by client concurrency x engine image. The cell
``(conc, image)`` of SKU ``s`` holds ``s``'s jobs at ``conc`` whose recipe *admits* the
image: its pinned image, or a tag of the same repository that its ``engine.track`` rule
follows. A job in a cell runs at the cell's image (``at_image``: a new fingerprint, so
results at each image stay apart and a history per image tag falls out).

Requests cover rectangles (``CellRange``): per (SKU, image), the SKU's concurrencies
from the lowest to the highest wanted. One rectangle is one run, so each server group
starts once for all its concurrencies. A cell inside a rectangle that nothing asked for
holds either no job at that image (it runs nothing) or jobs whose points are reused
when they are measured already.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

from pydantic import Field

from inferx_pipeline.errors import ImageRefError, MatrixError
from inferx_pipeline.images.refs import ImageRef
from inferx_pipeline.images.tracking import follows, runs_at
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.strict import FrozenModel


class Cell(FrozenModel):
    """One partition of one SKU's sweep."""

    sku: str = Field(description="Catalog SKU id (the sweep asset).")
    conc: int = Field(gt=0, description="Client concurrency.")
    image: str = Field(description="Engine image reference, as recipes spell it.")


class CellRange(FrozenModel):
    """A rectangle of cells: one image, a contiguous run of the SKU's concurrencies."""

    sku: str
    image: str
    concs: tuple[int, ...] = Field(min_length=1, description="Ascending, contiguous in the ladder.")

    @property
    def cells(self) -> list[Cell]:
        """Every cell the range covers."""
        return [Cell(sku=self.sku, conc=c, image=self.image) for c in self.concs]


def ladders(jobs: Iterable[BenchmarkJob]) -> dict[str, tuple[int, ...]]:
    """Each SKU's concurrencies (ascending), SKUs in first-seen order."""
    found: dict[str, set[int]] = defaultdict(set)
    for job in jobs:
        found[job.sku].add(job.conc)
    return {sku: tuple(sorted(concs)) for sku, concs in found.items()}


@lru_cache(maxsize=4096)
def _ref(image: str) -> ImageRef:
    return ImageRef.parse(image)


def admits(job: BenchmarkJob, image: str) -> bool:
    """True when ``job``'s recipe runs at ``image``: its pinned image or a tag it tracks.

    Raises ImageRefError (naming the reference) when ``image`` is not an image reference.
    """
    if image == job.engine.image:
        return True
    return runs_at(job.image_track, _ref(job.engine.image), _ref(image))


def follows_new(job: BenchmarkJob, image: str) -> bool:
    """True when a newly published ``image`` is one ``job``'s recipe measures unasked.

    ``admits`` plus the track rule's ``newer-than-pinned`` (the image sensor's question).
    """
    return follows(job.image_track, _ref(job.engine.image), _ref(image))


def at_image(job: BenchmarkJob, image: str) -> BenchmarkJob:
    """``job`` retagged to ``image`` (itself when that is its pinned image)."""
    if image == job.engine.image:
        return job
    return job.evolve(engine=job.engine.model_copy(update={"image": image}))


def cell_jobs(jobs: Iterable[BenchmarkJob], cells: Iterable[Cell]) -> list[BenchmarkJob]:
    """The jobs of ``cells``, each at its cell's image, in ``jobs`` order then cell order.

    Two recipes that differ only in their pinned tag become the same job at an image they
    both run at: that point is measured once, under the first recipe.
    """
    wanted: dict[tuple[str, int], list[str]] = defaultdict(list)
    for cell in dict.fromkeys(cells):
        wanted[(cell.sku, cell.conc)].append(cell.image)
    found: dict[tuple[str, int], BenchmarkJob] = {}
    for job in jobs:
        for image in wanted.get((job.sku, job.conc), ()):
            if admits(job, image):
                moved = at_image(job, image)
                found.setdefault((moved.fingerprint, moved.conc), moved)
    return list(found.values())


def pinned_cells(jobs: Iterable[BenchmarkJob]) -> set[Cell]:
    """The cells of each job at its recipe's pinned image (what a plain sweep measures)."""
    return {Cell(sku=job.sku, conc=job.conc, image=job.engine.image) for job in jobs}


def cells_at(jobs: Iterable[BenchmarkJob], images: Iterable[str]) -> set[Cell]:
    """The cells in which some job of ``jobs`` runs at one of ``images``."""
    wanted = tuple(dict.fromkeys(images))
    return {
        Cell(sku=job.sku, conc=job.conc, image=image)
        for job in jobs
        for image in wanted
        if admits(job, image)
    }


def runners(jobs: Iterable[BenchmarkJob], sku: str, image: str) -> list[str]:
    """The ids of ``sku``'s recipes among ``jobs`` that run at ``image`` (sorted).

    Empty for a string that is no image reference (a key typed into the UI): nothing runs
    at it.
    """
    try:
        return sorted({job.recipe_id for job in jobs if job.sku == sku and admits(job, image)})
    except ImageRefError:
        return []


def runnable_cells(jobs: Sequence[BenchmarkJob], images: Iterable[str]) -> set[Cell]:
    """``cells_at``, refusing an image that no job runs at on any SKU.

    Raises ImageRefError naming the first such image, the SKUs and what their recipes run
    instead (those of its repository, or every recipe when none uses it), before anything
    is added anywhere: an image partition no recipe runs at would only be measured empty.
    """
    wanted = list(dict.fromkeys(images))
    cells = cells_at(jobs, wanted)
    offered = {cell.image for cell in cells}
    for image in wanted:
        if image not in offered:
            raise ImageRefError(_unrun(jobs, image))
    return cells


def _unrun(jobs: Sequence[BenchmarkJob], image: str) -> str:
    ref = _ref(image)
    kin = [job for job in jobs if _ref(job.engine.image).same_repository(ref)]
    scope = "" if kin else f"no recipe uses the repository {ref.repository_id}; "
    runs: dict[str, dict[str, None]] = defaultdict(dict)
    for job in kin or jobs:
        runs[job.sku][f"{job.recipe_id} runs {job.engine.image}{_tracked(job)}"] = None
    instead = "; ".join(f"on {sku}: {', '.join(found)}" for sku, found in sorted(runs.items()))
    return (
        f"image {image}: no recipe runs at it on any SKU, so no SKU can offer it as a "
        f"partition ({scope}{instead}); give an image a recipe pins or tracks (its "
        "engine.track tags), or pin or track this one in a recipe; nothing was added"
    )


def _tracked(job: BenchmarkJob) -> str:
    rule = job.image_track
    if rule is None:
        return ""
    tags = " or ".join(rule.tags) if rule.tags else "any tag"
    return f" and tags {tags}" + (" newer than the pinned one" if rule.newer_than_pinned else "")


def partitioned(
    cells: Iterable[Cell], ladder_of: Mapping[str, Sequence[int]]
) -> tuple[list[Cell], list[Cell]]:
    """``cells`` split into those some partition holds and those none does (yet)."""
    held: list[Cell] = []
    outside: list[Cell] = []
    for cell in cells:
        (held if cell.conc in ladder_of.get(cell.sku, ()) else outside).append(cell)
    return held, outside


def covering_ranges(
    cells: Iterable[Cell], ladder_of: Mapping[str, Sequence[int]]
) -> list[CellRange]:
    """One rectangle per (SKU, image) from its lowest to its highest wanted concurrency.

    ``ladder_of`` maps each SKU to its partition concurrencies (``ladders``). A cell whose
    SKU or concurrency is not there raises MatrixError: no partition can hold it (the
    partitions were defined before the recipe change; reload the definitions).
    """
    by_key: dict[tuple[str, str], set[int]] = defaultdict(set)
    for cell in cells:
        by_key[(cell.sku, cell.image)].add(cell.conc)
    ranges = []
    for (sku, image), concs in sorted(by_key.items()):
        ladder = list(ladder_of.get(sku, ()))
        missing = sorted(c for c in concs if c not in ladder)
        if missing:
            raise MatrixError(
                f"SKU {sku!r} has no sweep partitions for concurrency {missing} (it has "
                f"{ladder or 'none'}); reload the Dagster definitions to pick up the recipes"
            )
        low, high = ladder.index(min(concs)), ladder.index(max(concs))
        ranges.append(CellRange(sku=sku, image=image, concs=tuple(ladder[low : high + 1])))
    return ranges
