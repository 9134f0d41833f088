"""Sweep partitions: per SKU, client concurrency x engine image (a dynamic dimension).

Dagster allows two dimensions per asset, so the SKU is the asset (one per SKU) and
its partitions are ``conc`` (the SKU's concurrencies, from the recipes at load time)
x ``image``. Each SKU has its own set of image partitions (``images_<sku>``), so a
SKU's asset offers only images added for it: the sensors, ``inferx images add`` and
the ``sweep_matrix`` asset add an image to the SKUs whose recipes run at it. Keys are
image references as recipes spell them, built with ``dg.MultiPartitionKey``, never by
hand (the key string orders dimensions by name).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence

import dagster as dg

from inferx_pipeline.matrix.partitions import Cell, CellRange

CONC = "conc"
IMAGE = "image"
# Dagster's tags for a run over a partition range (public tag names of its backfills).
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"


def images_name(sku: str) -> str:
    """The name of ``sku``'s image partitions: ``images_<sku>`` (Dagster name characters)."""
    return "images_" + re.sub(r"[^A-Za-z0-9_]", "_", sku)


def sweep_partitions(sku: str, ladder: Sequence[int]) -> dg.MultiPartitionsDefinition:
    """Concurrency (``ladder``, ascending) x ``sku``'s images for its sweep asset."""
    concs = dg.StaticPartitionsDefinition([str(conc) for conc in ladder])
    images = dg.DynamicPartitionsDefinition(name=images_name(sku))
    return dg.MultiPartitionsDefinition({CONC: concs, IMAGE: images})


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


def images_by_sku(cells: Iterable[Cell]) -> dict[str, list[str]]:
    """The images of ``cells`` per SKU (first-seen order, each once)."""
    found: dict[str, dict[str, None]] = defaultdict(dict)
    for cell in cells:
        found[cell.sku][cell.image] = None
    return {sku: list(images) for sku, images in found.items()}


def add_images(instance: dg.DagsterInstance, cells: Iterable[Cell]) -> dict[str, list[str]]:
    """Register each cell's image as a partition of its SKU; the new images per SKU."""
    new: dict[str, list[str]] = {}
    for sku, images in images_by_sku(cells).items():
        known = set(instance.get_dynamic_partitions(images_name(sku)))
        fresh = [image for image in images if image not in known]
        instance.add_dynamic_partitions(images_name(sku), fresh)
        if fresh:
            new[sku] = fresh
    return new


def add_requests(cells: Iterable[Cell]) -> list[dg.AddDynamicPartitionsRequest]:
    """A sensor's requests adding each cell's image to its SKU's image partitions."""
    return [
        dg.AddDynamicPartitionsRequest(images_name(sku), sorted(images))
        for sku, images in sorted(images_by_sku(cells).items())
    ]
