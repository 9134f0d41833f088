"""Sweep partitions: per SKU, client concurrency x engine image (a dynamic dimension).

Dagster allows two dimensions per asset, so the SKU is the asset (one per SKU) and
its partitions are ``conc`` (the SKU's concurrencies, from the recipes at load time)
x ``image``. Each SKU has its own set of image partitions (``images_<sku>``), so a
SKU's asset offers only images added for it: the sensors, ``inferx images add`` and
the ``sweep_matrix`` asset add an image to the SKUs whose recipes run at it, and to no
other (``inferx images add`` refuses an image no recipe runs at). A partition no recipe
of its SKU runs at any more (a recipe repinned or removed since) is a stray:
``stray_images`` finds them, ``remove_images`` (``inferx images prune``) deletes them.
Keys are built with ``dg.MultiPartitionKey``, never by hand (the key string orders
dimensions by name).

An image's key is short enough to read in the UI and on plot axes: the last component
of its repository and its tag, hex runs of 16+ characters cut to 12
(``vllm-openai:nightly-cd10ed6f9f6b``; ``vllm-openai@sha256-3f2a…`` without a tag,
``sglang:v0.5.14-cu130@sha256-5027…`` for a tag pinned to a digest).
Whoever adds a key records key -> reference in the instance's key-value storage
(``inferx/image-key/<set>/<key>``), where every reader finds it, and a key that already
names another image in the set is refused (another spelling of the same image, such as
InferenceX's ``nvcr.io#nvidia/...`` beside ``nvcr.io/nvidia/...``, shares the key and
its first recorded spelling). A key with no record is read as a
reference itself: keys typed into the UI's "Add a partition", and the full-reference keys
of instances from before short keys, keep working.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

import dagster as dg

from inferx_pipeline.errors import ImageRefError
from inferx_pipeline.images.refs import ImageRef
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.partitions import Cell, CellRange, runners

CONC = "conc"
IMAGE = "image"
# Dagster's tags for a run over a partition range (public tag names of its backfills).
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"
# Hex runs this long (commit SHAs, digests) are cut to SHORT_HEX characters in keys.
_LONG_HEX = re.compile(r"[0-9a-f]{16,}")
SHORT_HEX = 12
KEY_RECORD = "inferx/image-key"


def images_name(sku: str) -> str:
    """The name of ``sku``'s image partitions: ``images_<sku>`` (Dagster name characters)."""
    return "images_" + re.sub(r"[^A-Za-z0-9_]", "_", sku)


def sweep_partitions(sku: str, ladder: Sequence[int]) -> dg.MultiPartitionsDefinition:
    """Concurrency (``ladder``, ascending) x ``sku``'s images for its sweep asset."""
    concs = dg.StaticPartitionsDefinition([str(conc) for conc in ladder])
    images = dg.DynamicPartitionsDefinition(name=images_name(sku))
    return dg.MultiPartitionsDefinition({CONC: concs, IMAGE: images})


def image_key(image: str) -> str:
    """The short partition key of the image reference ``image`` (see the module docstring).

    A string that is no image reference is its own key (the run's check names it).
    """
    try:
        ref = ImageRef.parse(image)
    except ImageRefError:
        return image
    repo = ref.repository.rsplit("/", 1)[-1]
    tag = (
        "" if ref.tag is None else ":" + _LONG_HEX.sub(lambda hexes: hexes[0][:SHORT_HEX], ref.tag)
    )
    if ref.digest is None:
        return f"{repo}{tag}"
    # A tag pinned to a digest is another image than the bare tag (which may move since):
    # InferenceX pins both on one SKU, so the digest stays in the key.
    algorithm, _, hexes = ref.digest.partition(":")
    return f"{repo}{tag}@{algorithm}-{hexes[:SHORT_HEX]}"


def cell_key(cell: Cell) -> dg.MultiPartitionKey:
    """The partition key of ``cell`` in its SKU's asset."""
    return dg.MultiPartitionKey({CONC: str(cell.conc), IMAGE: image_key(cell.image)})


def _record(sku: str, key: str) -> str:
    return f"{KEY_RECORD}/{images_name(sku)}/{key}"


def images_of_keys(instance: dg.DagsterInstance, sku: str, keys: Iterable[str]) -> dict[str, str]:
    """Image key -> reference in ``sku``'s set; a key with no record is its own reference."""
    wanted = set(keys)
    found = instance.run_storage.get_cursor_values({_record(sku, key) for key in wanted})
    return {key: found.get(_record(sku, key), key) for key in wanted}


def record_images(instance: dg.DagsterInstance, sku: str, images: Sequence[str]) -> list[str]:
    """Record each image's key in ``sku``'s set (idempotent); the keys, in ``images`` order.

    Raises ImageRefError, recording nothing, when a key would name two references.
    """
    claimed: dict[str, str] = {}
    for image in images:
        key = image_key(image)
        if not same_image(claimed.setdefault(key, image), image):
            _refuse(sku, key, claimed[key], image)
    known = images_of_keys(instance, sku, claimed)
    fresh: dict[str, str] = {}
    for key, image in claimed.items():
        if known[key] == key:  # no record (a key with none reads as itself)
            fresh[key] = image
        elif not same_image(known[key], image):
            _refuse(sku, key, known[key], image)
    # A recorded key keeps its first spelling: its cells already read that reference.
    if fresh:  # Dagster's SQL storage fails on an empty batch
        instance.run_storage.set_cursor_values({_record(sku, k): i for k, i in fresh.items()})
    return [image_key(image) for image in images]


def same_image(first: str, second: str) -> bool:
    """True when two references name one image, however spelled (registry host aliases,
    enroot's ``HOST#PATH``): same repository, tag and digest. Strings that are no
    reference are the same only when equal."""
    if first == second:
        return True
    try:
        one, other = ImageRef.parse(first), ImageRef.parse(second)
    except ImageRefError:
        return False
    return (one.repository_id, one.tag, one.digest) == (
        other.repository_id,
        other.tag,
        other.digest,
    )


def _refuse(sku: str, key: str, holder: str, image: str) -> None:
    raise ImageRefError(
        f"image {image}: its partition key {key!r} in {images_name(sku)} already names "
        f"{holder}; two images of one SKU need keys that differ in repository name or tag "
        "(rename the tag, or pin one of them by another tag)"
    )


def cells_of(
    instance: dg.DagsterInstance, sku: str, keys: Iterable[dg.MultiPartitionKey]
) -> dict[dg.MultiPartitionKey, Cell]:
    """The cell of each of ``sku``'s partition keys (as a run's context lists them)."""
    key_list = list(keys)
    image_of = images_of_keys(instance, sku, (key.keys_by_dimension[IMAGE] for key in key_list))
    return {
        key: Cell(
            sku=sku,
            conc=int(key.keys_by_dimension[CONC]),
            image=image_of[key.keys_by_dimension[IMAGE]],
        )
        for key in key_list
    }


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
    """Register each cell's image as a partition of its SKU; the new images per SKU.

    Raises ImageRefError (see ``record_images``) before adding any partition of that SKU.
    """
    new: dict[str, list[str]] = {}
    for sku, images in images_by_sku(cells).items():
        keys = record_images(instance, sku, images)
        known = set(instance.get_dynamic_partitions(images_name(sku)))
        fresh: dict[str, str] = {}  # two spellings of one image share a key: added once
        for key, image in zip(keys, images, strict=True):
            if key not in known:
                fresh.setdefault(key, image)
        instance.add_dynamic_partitions(images_name(sku), list(fresh))
        if fresh:
            new[sku] = list(fresh.values())
    return new


def stray_images(
    instance: dg.DagsterInstance, skus: Iterable[str], jobs: Sequence[BenchmarkJob]
) -> dict[str, dict[str, str]]:
    """Per SKU of ``skus``, its image partitions (key -> reference) none of its jobs run at.

    Such a partition offers cells that would measure nothing: a recipe repinned or removed
    since the image was added, or a key typed into the UI. SKUs without any are left out.
    """
    found: dict[str, dict[str, str]] = {}
    for sku in dict.fromkeys(skus):
        keys = instance.get_dynamic_partitions(images_name(sku))
        of_key = images_of_keys(instance, sku, keys)
        strays = {key: of_key[key] for key in keys if not runners(jobs, sku, of_key[key])}
        if strays:
            found[sku] = strays
    return found


def remove_images(instance: dg.DagsterInstance, strays: Mapping[str, Iterable[str]]) -> None:
    """Delete each SKU's image partitions ``strays`` names (keys); idempotent.

    Materializations at those keys stay in the event log, and so does each key's record
    (key -> reference), so runs and results already made there still read their image.
    """
    for sku, keys in strays.items():
        for key in keys:
            instance.delete_dynamic_partition(images_name(sku), key)


def add_requests(
    instance: dg.DagsterInstance, cells: Iterable[Cell]
) -> list[dg.AddDynamicPartitionsRequest]:
    """A sensor's requests adding each cell's image to its SKU's image partitions.

    The keys are recorded on ``instance`` now (harmless if the requests are dropped).
    """
    return [
        dg.AddDynamicPartitionsRequest(
            images_name(sku), sorted(set(record_images(instance, sku, images)))
        )
        for sku, images in sorted(images_by_sku(cells).items())
    ]
