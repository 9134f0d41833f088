"""Image partitions of an imported InferenceX sweep: one image spelled two ways, and a tag
pinned beside the same tag with a digest, on one SKU."""

from __future__ import annotations

import dagster as dg

from inferx_pipeline.defs.partitions import (
    add_images,
    add_requests,
    cells_of,
    image_key,
    same_image,
    stray_images,
)
from inferx_pipeline.matrix.partitions import Cell

SLASH = "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc24"
ENROOT = "nvcr.io#nvidia/tensorrt-llm/release:1.3.0rc24"  # InferenceX's pyxis spelling
TAG = "lmsysorg/sglang:v0.5.14-cu130"
DIGEST = "sha256:5027e95bf6ec536856b1b52a91d1f35ff5c564ab83e8a94758a169ff09bb8df3"


def test_a_tag_pinned_to_a_digest_keeps_the_digest_in_its_key() -> None:
    assert image_key(TAG) == "sglang:v0.5.14-cu130"
    assert image_key(f"{TAG}@{DIGEST}") == "sglang:v0.5.14-cu130@sha256-5027e95bf6ec"
    assert len(image_key(f"{TAG}@{DIGEST}")) <= 40


def test_same_image_compares_repository_tag_and_digest_not_spelling() -> None:
    assert same_image(SLASH, ENROOT)
    assert same_image("docker.io/lmsysorg/sglang:v1", "lmsysorg/sglang:v1")
    assert not same_image(TAG, f"{TAG}@{DIGEST}")
    assert not same_image("myfork/sglang:v1", "lmsysorg/sglang:v1")
    assert not same_image("not a reference", "not a reference either")


def test_two_spellings_of_one_image_share_one_partition_and_the_first_spelling() -> None:
    with dg.instance_for_test() as instance:
        cells = [Cell(sku="gb300", conc=c, image=i) for c, i in ((1, SLASH), (2, ENROOT))]
        assert add_images(instance, cells) == {"gb300": [SLASH]}
        assert instance.get_dynamic_partitions("images_gb300") == ["release:1.3.0rc24"]
        # Added again in the other spelling: nothing new, the record keeps the first.
        assert add_images(instance, [Cell(sku="gb300", conc=4, image=ENROOT)]) == {}
        key = dg.MultiPartitionKey({"conc": "4", "image": "release:1.3.0rc24"})
        assert cells_of(instance, "gb300", [key])[key].image == SLASH


def test_a_tag_and_the_same_tag_pinned_to_a_digest_are_two_partitions() -> None:
    with dg.instance_for_test() as instance:
        pinned = f"{TAG}@{DIGEST}"
        cells = [Cell(sku="gb300", conc=1, image=i) for i in (TAG, pinned)]
        assert add_images(instance, cells) == {"gb300": [TAG, pinned]}
        assert sorted(instance.get_dynamic_partitions("images_gb300")) == [
            "sglang:v0.5.14-cu130",
            "sglang:v0.5.14-cu130@sha256-5027e95bf6ec",
        ]
        assert stray_images(instance, ["gb300"], []) == {
            "gb300": {image_key(TAG): TAG, image_key(pinned): pinned}
        }


def test_a_sensors_request_names_a_shared_key_once() -> None:
    with dg.instance_for_test() as instance:
        cells = [Cell(sku="gb300", conc=1, image=i) for i in (SLASH, ENROOT)]
        (request,) = add_requests(instance, cells)
        assert list(request.partition_keys) == ["release:1.3.0rc24"]
