"""Sweep partitions: per SKU, client concurrency x engine image (a dynamic dimension).

Dagster allows two dimensions per asset, so the SKU is the asset (one per SKU) and
its partitions are ``conc`` (the SKU's concurrencies, from the recipes at load time)
x ``image`` (image references, added by the sensors, ``inferx images add`` and the
``sweep_matrix`` asset for the recipes' pinned images). Keys are built with
``dg.MultiPartitionKey``, never by hand (the key string orders dimensions by name).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import dagster as dg

from inferx_pipeline.matrix.partitions import Cell, CellRange

IMAGES_NAME = "images"
IMAGES = dg.DynamicPartitionsDefinition(name=IMAGES_NAME)
CONC = "conc"
IMAGE = "image"
# Dagster's tags for a run over a partition range (public tag names of its backfills).
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"


def sweep_partitions(ladder: Sequence[int]) -> dg.MultiPartitionsDefinition:
    """Concurrency (``ladder``, ascending) x image for one SKU's sweep asset."""
    concs = dg.StaticPartitionsDefinition([str(conc) for conc in ladder])
    return dg.MultiPartitionsDefinition({CONC: concs, IMAGE: IMAGES})


def cell_key(cell: Cell) -> dg.MultiPartitionKey:
    """The partition key of ``cell`` in its SKU's asset."""
    return dg.MultiPartitionKey({CONC: str(cell.conc), IMAGE: cell.image})


def cells_of(sku: str, keys: Iterable[dg.MultiPartitionKey]) -> list[Cell]:
    """The cells of ``sku``'s partition keys (as a run's context lists them)."""
    return [
        Cell(sku=sku, conc=int(key.keys_by_dimension[CONC]), image=key.keys_by_dimension[IMAGE])
        for key in keys
    ]


def range_tags(cell_range: CellRange) -> dict[str, str]:
    """Run tags that make one run cover ``cell_range`` (one server start per group)."""
    first, last = cell_range.cells[0], cell_range.cells[-1]
    return {RANGE_START_TAG: str(cell_key(first)), RANGE_END_TAG: str(cell_key(last))}


def add_images(instance: dg.DagsterInstance, images: Iterable[str]) -> list[str]:
    """Register ``images`` as image partitions; returns those that were new."""
    known = set(instance.get_dynamic_partitions(IMAGES_NAME))
    new = [image for image in dict.fromkeys(images) if image not in known]
    instance.add_dynamic_partitions(IMAGES_NAME, new)
    return new
