"""Run requests for sweep cells: one run per rectangle of (SKU, image, concurrencies).

Every sensor and the command line turn the cells they want measured into requests the
same way, so a request over several concurrencies is one run and each server group
starts once. Tags carry why (``inferx/reason``) and what triggered it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import dagster as dg

from inferx_pipeline.defs.jobs import sweep_job_name
from inferx_pipeline.defs.partitions import range_tags
from inferx_pipeline.defs.tags import REASON_TAG
from inferx_pipeline.matrix.partitions import Cell, CellRange, covering_ranges


def run_key(prefix: str, cell_range: CellRange) -> str:
    """A run key naming ``prefix`` and the rectangle, so one trigger never runs it twice."""
    concs = f"{cell_range.concs[0]}-{cell_range.concs[-1]}"
    return f"{prefix}:{cell_range.sku}:{cell_range.image}:{concs}"


def cell_requests(
    cells: Iterable[Cell],
    ladder_of: Mapping[str, Sequence[int]],
    *,
    reason: str,
    key_prefix: str,
    tags: Mapping[str, str] | None = None,
) -> list[dg.RunRequest]:
    """One RunRequest per covering rectangle of ``cells`` (see ``covering_ranges``)."""
    return [
        dg.RunRequest(
            job_name=sweep_job_name(cell_range.sku),
            run_key=run_key(key_prefix, cell_range),
            tags={**range_tags(cell_range), **(tags or {}), REASON_TAG: reason},
        )
        for cell_range in covering_ranges(cells, ladder_of)
    ]
