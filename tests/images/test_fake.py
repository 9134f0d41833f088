"""FakeRegistry: the in-memory RegistryClient other layers' tests use in place of a registry."""

from __future__ import annotations

import pytest

from inferx_pipeline.errors import ImageRefError, RegistryError
from inferx_pipeline.images.fake import FakeRegistry
from inferx_pipeline.images.refs import ImageRef
from inferx_pipeline.images.registry import Registries, RegistryClient


def test_tags_digests_and_pushes() -> None:
    fake = FakeRegistry({"vllm/vllm-openai": {"nightly-b": "sha256:" + "b" * 64}})
    pushed = fake.push("vllm/vllm-openai", "nightly-a")
    assert pushed.startswith("sha256:") and len(pushed) == 71
    assert fake.push("vllm/vllm-openai", "nightly-c", "sha256:" + "c" * 64) == "sha256:" + "c" * 64
    assert fake.tags("vllm/vllm-openai") == ["nightly-a", "nightly-b", "nightly-c"]
    assert fake.digest("vllm/vllm-openai", "nightly-a") == pushed
    assert fake.calls == [
        ("tags", "vllm/vllm-openai"),
        ("digest", "vllm/vllm-openai", "nightly-a"),
    ]


def test_a_new_tag_replaces_the_digest_of_a_moved_tag() -> None:
    fake = FakeRegistry()
    first = fake.push("lmsysorg/sglang", "latest", "sha256:" + "1" * 64)
    moved = fake.push("lmsysorg/sglang", "latest", "sha256:" + "2" * 64)
    assert first != moved and fake.digest("lmsysorg/sglang", "latest") == moved


def test_unknown_names_fail_like_a_registry() -> None:
    fake = FakeRegistry({"vllm/vllm-openai": {"a": "sha256:" + "a" * 64}})
    with pytest.raises(RegistryError, match=r"vllm/nope: NAME_UNKNOWN.*one of: vllm/vllm-openai"):
        fake.tags("vllm/nope")
    with pytest.raises(RegistryError, match=r"vllm/vllm-openai:b: MANIFEST_UNKNOWN.*tags: a;"):
        fake.digest("vllm/vllm-openai", "b")
    with pytest.raises(ImageRefError, match="tag 'bad tag' is not a valid image tag"):
        fake.push("vllm/vllm-openai", "bad tag")


def test_serves_a_host_through_registries() -> None:
    fake = FakeRegistry({"vllm/vllm-openai": {"x": "sha256:" + "e" * 64}})
    client: RegistryClient = Registries(clients={"docker.io": fake}).client_for(
        ImageRef.parse("vllm/vllm-openai:x")
    )
    assert client.digest("vllm/vllm-openai", "x") == "sha256:" + "e" * 64
