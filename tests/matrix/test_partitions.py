"""Sweep cells: which jobs a (SKU, conc, image) cell holds, retagging, covering rectangles."""

from __future__ import annotations

import pytest

from inferx_pipeline.errors import MatrixError
from inferx_pipeline.images.tracking import TrackRule
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.partitions import (
    Cell,
    at_image,
    cell_jobs,
    cells_at,
    covering_ranges,
    ladders,
    pinned_cells,
)
from tests.engines.jobs import recipe_jobs

H200 = "qwen3.827b-fp8-h200-vllm-mtp"
BF16 = "qwen3.827b-bf16-mi325x-vllm-mtp"
MINIMAX = "minimaxm3-fp8-mi325x-vllm-agentic-mtp"
VLLM_ROCM = "vllm/vllm-openai-rocm"


def _tracking(jobs: list[BenchmarkJob], *globs: str) -> list[BenchmarkJob]:
    rule = TrackRule(tags=globs)
    return [job.evolve(image_track=rule) for job in jobs]


def test_pinned_cells_are_each_jobs_own_image() -> None:
    jobs = recipe_jobs(BF16) + recipe_jobs(MINIMAX)
    cells = pinned_cells(jobs)
    assert {c.image for c in cells} == {job.engine.image for job in jobs}
    assert len({c.image for c in cells}) == 2  # two nightlies of one repository
    assert cell_jobs(jobs, cells) == jobs  # each job once, unchanged (its pinned image)


def test_a_cell_holds_only_jobs_whose_recipe_pins_or_tracks_its_image() -> None:
    bf16, minimax = recipe_jobs(BF16), recipe_jobs(MINIMAX)
    image = bf16[0].engine.image
    held = cell_jobs([*bf16, *minimax], [Cell(sku="mi325x", conc=4, image=image)])
    # minimax pins another nightly of the same repository and tracks nothing: not held.
    assert [job.recipe_id for job in held] == [BF16]
    assert all(job.conc == 4 for job in held)
    tracked = _tracking(minimax, "nightly-*")
    held = cell_jobs([*bf16, *tracked], [Cell(sku="mi325x", conc=4, image=image)])
    assert {job.recipe_id for job in held} == {BF16, MINIMAX}
    assert {job.engine.image for job in held} == {image}


def test_retagging_changes_the_fingerprint_and_nothing_else() -> None:
    job = recipe_jobs(H200)[0]
    other = f"{job.engine.image.rsplit(':', 1)[0]}:nightly-0000"
    moved = at_image(job, other)
    assert moved.engine.image == other and moved.fingerprint != job.fingerprint
    assert moved.evolve(engine=job.engine).fingerprint == job.fingerprint
    assert at_image(job, job.engine.image) is job


def test_cells_at_follow_the_track_rule_per_recipe() -> None:
    jobs = _tracking(recipe_jobs(H200), "nightly-*")
    repo = jobs[0].engine.image.rsplit(":", 1)[0]
    cells = cells_at(jobs, [f"{repo}:nightly-new", f"{repo}:v0.11.0", f"{VLLM_ROCM}:nightly-x"])
    assert {c.image for c in cells} == {f"{repo}:nightly-new"}
    assert sorted(c.conc for c in cells) == sorted(job.conc for job in jobs)


def test_covering_ranges_span_lowest_to_highest_in_the_ladder() -> None:
    jobs = recipe_jobs(BF16) + recipe_jobs(MINIMAX)
    ladder = ladders(jobs)
    assert ladder == {"mi325x": (1, 2, 4, 8, 12, 16, 32, 64, 128)}
    minimax_image = recipe_jobs(MINIMAX)[0].engine.image
    ranges = covering_ranges(pinned_cells(jobs), ladder)
    by_image = {r.image: r.concs for r in ranges}
    assert by_image[minimax_image] == (1, 2, 4, 8, 12, 16)  # one run: 2 is inside the range
    assert by_image[recipe_jobs(BF16)[0].engine.image] == ladder["mi325x"]


def test_a_cell_outside_the_ladder_is_an_error_that_says_reload() -> None:
    with pytest.raises(MatrixError, match="reload the Dagster definitions"):
        covering_ranges([Cell(sku="mi325x", conc=3, image="x:y")], {"mi325x": (1, 2, 4)})
