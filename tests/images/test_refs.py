"""Image references: parsing Docker's grammar and enroot's, identity, respelling with a tag."""

from __future__ import annotations

import pytest

from inferx_pipeline.errors import ImageRefError
from inferx_pipeline.images.refs import ImageRef

DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("text", "registry", "repository", "tag", "digest"),
    [
        (
            "vllm/vllm-openai-rocm:nightly-a8d1aa9c99b8698a2a78b611b7a10c30e6b3995b",
            "docker.io",
            "vllm/vllm-openai-rocm",
            "nightly-a8d1aa9c99b8698a2a78b611b7a10c30e6b3995b",
            None,
        ),
        (
            "lmsysorg/sglang-rocm:v0.5.16-rocm720-mi30x-20260730",
            "docker.io",
            "lmsysorg/sglang-rocm",
            "v0.5.16-rocm720-mi30x-20260730",
            None,
        ),
        (
            "nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc0",
            "nvcr.io",
            "nvidia/tensorrt-llm/release",
            "1.2.0rc0",
            None,
        ),
        (
            "nvcr.io#nvidia/tensorrt-llm/release:1.3.0rc14",
            "nvcr.io",
            "nvidia/tensorrt-llm/release",
            "1.3.0rc14",
            None,
        ),
        (
            "127.0.0.1:5000/vllm/vllm-openai:nightly-x",
            "127.0.0.1:5000",
            "vllm/vllm-openai",
            "nightly-x",
            None,
        ),
        ("localhost/team/img", "localhost", "team/img", "latest", None),
        ("ubuntu", "docker.io", "library/ubuntu", "latest", None),
        ("docker.io/ubuntu:22.04", "docker.io", "library/ubuntu", "22.04", None),
        ("index.docker.io/vllm/vllm-openai:v1", "docker.io", "vllm/vllm-openai", "v1", None),
        (f"repo@{DIGEST}", "docker.io", "library/repo", None, DIGEST),
        (f"lmsysorg/sglang:v0.5.14-cu130@{DIGEST}", "docker.io", "lmsysorg/sglang",
         "v0.5.14-cu130", DIGEST),
    ],
)  # fmt: skip
def test_parse(
    text: str, registry: str, repository: str, tag: str | None, digest: str | None
) -> None:
    ref = ImageRef.parse(text)
    assert (ref.registry, ref.repository, ref.tag, ref.digest) == (
        registry,
        repository,
        tag,
        digest,
    )
    assert str(ref) == text


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty or contains whitespace"),
        ("vllm/vllm openai", "empty or contains whitespace"),
        ("Vllm/vllm-openai:v1", "path component 'Vllm'"),
        ("vllm//x:v1", "path component ''"),
        ("vllm/x:", "tag '' is not"),
        ("vllm/x:-bad", "tag '-bad' is not"),
        ("vllm/x@sha256:zz", "digest 'sha256:zz' is not ALGORITHM:HEX"),
        ("bad_host#x/y:1", "'bad_host' before '#' is not a registry host"),
        ("nvcr.io#", "path component ''"),
    ],
)
def test_bad_references_say_what_and_what_is_expected(text: str, why: str) -> None:
    with pytest.raises(ImageRefError) as caught:
        ImageRef.parse(text)
    message = str(caught.value)
    assert message.startswith(f"image reference {text!r}: ")
    assert why in message
    assert "expected [REGISTRY/]REPOSITORY[:TAG][@DIGEST]" in message


def test_same_repository_ignores_spelling_tag_and_digest() -> None:
    a = ImageRef.parse("nvcr.io#nvidia/tensorrt-llm/release:1.3.0rc14")
    b = ImageRef.parse(f"nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc0@{DIGEST}")
    assert a.same_repository(b) and a.repository_id == "nvcr.io/nvidia/tensorrt-llm/release"
    assert ImageRef.parse("ubuntu").same_repository(ImageRef.parse("docker.io/library/ubuntu:x"))
    hub = ImageRef.parse("vllm/vllm-openai:v1")
    assert not hub.same_repository(ImageRef.parse("vllm/vllm-openai-rocm:v1"))
    assert not hub.same_repository(ImageRef.parse("127.0.0.1:5000/vllm/vllm-openai:v1"))


@pytest.mark.parametrize(
    ("text", "tag", "expected"),
    [
        ("vllm/vllm-openai:nightly-a", "nightly-b", "vllm/vllm-openai:nightly-b"),
        ("ubuntu", "24.04", "ubuntu:24.04"),
        ("docker.io/ubuntu:22.04", "24.04", "docker.io/ubuntu:24.04"),
        ("nvcr.io#nvidia/tensorrt-llm/release:1.3.0rc14", "1.3.0rc24",
         "nvcr.io#nvidia/tensorrt-llm/release:1.3.0rc24"),
        ("127.0.0.1:5000/vllm/vllm-openai", "x", "127.0.0.1:5000/vllm/vllm-openai:x"),
        (f"lmsysorg/sglang:v0.5.14-cu130@{DIGEST}", "v0.5.16-cu130",
         "lmsysorg/sglang:v0.5.16-cu130"),
        (f"repo@{DIGEST}", "v1", "repo:v1"),
    ],
)  # fmt: skip
def test_with_tag_keeps_the_input_spelling(text: str, tag: str, expected: str) -> None:
    assert ImageRef.parse(text).with_tag(tag) == expected


def test_with_tag_and_digest_and_bad_tag() -> None:
    ref = ImageRef.parse("vllm/vllm-openai:a")
    assert ref.with_tag("b", digest=DIGEST) == f"vllm/vllm-openai:b@{DIGEST}"
    with pytest.raises(ImageRefError, match="tag 'no/slash' is not a valid image tag"):
        ref.with_tag("no/slash")
