"""Image partition keys: short, unique within a SKU's set, resolved to the full reference."""

from __future__ import annotations

import dagster as dg
import pytest

from inferx_pipeline.defs.partitions import (
    add_images,
    cells_of,
    image_key,
    images_of_keys,
    record_images,
)
from inferx_pipeline.errors import ImageRefError
from inferx_pipeline.matrix.partitions import Cell

NIGHTLY = "vllm/vllm-openai:nightly-cd10ed6f9f6b37a8ace9cf380007e66fe12ec0c3"
DIGEST = "sha256:" + "ab12" * 16


@pytest.mark.parametrize(
    ("image", "key"),
    [
        (NIGHTLY, "vllm-openai:nightly-cd10ed6f9f6b"),
        ("vllm/vllm-openai:v0.11.0", "vllm-openai:v0.11.0"),
        ("lmsysorg/sglang:v0.11.0", "sglang:v0.11.0"),  # same tag, another repository
        ("nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc14", "release:1.3.0rc14"),
        (f"vllm/vllm-openai@{DIGEST}", "vllm-openai@sha256-ab12ab12ab12"),
        ("not a reference", "not a reference"),  # its own key; the run's check names it
    ],
)
def test_keys_are_the_repository_name_and_a_shortened_tag(image: str, key: str) -> None:
    assert image_key(image) == key
    assert len(key) <= 40 or key == "not a reference"


def test_added_images_get_short_keys_that_resolve_to_their_references() -> None:
    with dg.instance_for_test() as instance:
        images = [NIGHTLY, "vllm/vllm-openai:v0.11.0", "lmsysorg/sglang:v0.11.0"]
        new = add_images(instance, [Cell(sku="h200", conc=1, image=i) for i in images])
        assert new == {"h200": images}
        keys = instance.get_dynamic_partitions("images_h200")
        assert sorted(keys) == [
            "sglang:v0.11.0",
            "vllm-openai:nightly-cd10ed6f9f6b",
            "vllm-openai:v0.11.0",
        ]
        assert images_of_keys(instance, "h200", keys) == {image_key(i): i for i in images}
        assert add_images(instance, [Cell(sku="h200", conc=2, image=NIGHTLY)]) == {}
        key = dg.MultiPartitionKey({"conc": "8", "image": "vllm-openai:nightly-cd10ed6f9f6b"})
        assert cells_of(instance, "h200", [key]) == {key: Cell(sku="h200", conc=8, image=NIGHTLY)}


def test_a_key_without_a_record_is_read_as_the_reference_itself() -> None:
    """Keys typed into the UI, and full-reference keys of instances from before short keys."""
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("images_h200", [NIGHTLY])
        key = dg.MultiPartitionKey({"conc": "1", "image": NIGHTLY})
        assert cells_of(instance, "h200", [key]) == {key: Cell(sku="h200", conc=1, image=NIGHTLY)}


def test_a_key_that_would_name_two_references_is_refused_and_nothing_is_recorded() -> None:
    fork = "ghcr.io/myfork/vllm-openai:v0.11.0"
    with dg.instance_for_test() as instance:
        record_images(instance, "h200", ["vllm/vllm-openai:v0.11.0"])
        with pytest.raises(ImageRefError) as raised:
            add_images(instance, [Cell(sku="h200", conc=1, image=fork)])
        assert str(raised.value) == (
            f"image {fork}: its partition key 'vllm-openai:v0.11.0' in images_h200 already "
            "names vllm/vllm-openai:v0.11.0; two images of one SKU need keys that differ in "
            "repository name or tag (rename the tag, or pin one of them by another tag)"
        )
        assert instance.get_dynamic_partitions("images_h200") == []
        with pytest.raises(ImageRefError):  # two in one call: refused before writing either
            record_images(instance, "mi300x", ["vllm/vllm-openai:v1", "myfork/vllm-openai:v1"])
        assert images_of_keys(instance, "mi300x", ["vllm-openai:v1"]) == {
            "vllm-openai:v1": "vllm-openai:v1"
        }
        # Another SKU's set is separate: the fork may take the key there.
        assert record_images(instance, "mi325x", [fork]) == ["vllm-openai:v0.11.0"]
