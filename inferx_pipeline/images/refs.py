"""Container image references: parse ``[registry/]repository[:tag][@digest]``, keep the spelling.

Docker's grammar, plus InferenceX's enroot spelling ``nvcr.io#nvidia/tensorrt-llm/release:1.3``
(``#`` between the registry host and the path). A first path component is a registry host
when it has a ``.`` or a ``:`` or is ``localhost`` (Docker's rule); otherwise the image is
on Docker Hub (``docker.io``), where one-component names are official images under
``library/``. No tag and no digest means the tag ``latest``. IPv6 hosts are not supported.

``ImageRef.repository_id`` (``registry/repository``, Docker Hub's aliases folded) is how two
references are compared; ``with_tag`` writes a new reference in the spelling the input used,
so ``vllm/vllm-openai:a`` becomes ``vllm/vllm-openai:b``, never ``docker.io/vllm/...``.
"""

from __future__ import annotations

import re

from pydantic import Field

from inferx_pipeline.errors import ImageRefError
from inferx_pipeline.strict import FrozenModel

DOCKER_HUB = "docker.io"
# Hostnames that all mean Docker Hub (docker pull accepts each).
_HUB_ALIASES = frozenset({"docker.io", "index.docker.io", "registry-1.docker.io"})

_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
_HOST = re.compile(
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
    r"(?::[0-9]+)?"
)
TAG_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
DIGEST_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}")
_EXPECTED = (
    "expected [REGISTRY/]REPOSITORY[:TAG][@DIGEST], e.g. vllm/vllm-openai:v0.11.0 or "
    "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc14"
)


def _fail(text: str, what: str) -> ImageRefError:
    return ImageRefError(f"image reference {text!r}: {what}; {_EXPECTED}")


def _is_host(component: str) -> bool:
    return "." in component or ":" in component or component == "localhost"


def check_tag(tag: str, *, where: str) -> str:
    """``tag`` if it is a valid image tag (``[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}``), else raise."""
    if TAG_PATTERN.fullmatch(tag) is None:
        raise ImageRefError(
            f"{where}: tag {tag!r} is not a valid image tag; expected letters, digits, "
            "'_', '.' and '-' (at most 128, not starting with '.' or '-')"
        )
    return tag


class ImageRef(FrozenModel):
    """A parsed image reference; build it with ``ImageRef.parse``."""

    text: str = Field(description="The reference exactly as written.")
    name: str = Field(description="The written part before the tag and digest.")
    registry: str = Field(description="Registry host (lower case), docker.io by default.")
    repository: str = Field(description="Repository path, library/ for official Hub images.")
    tag: str | None = Field(description="Tag; latest when neither tag nor digest is written.")
    digest: str | None = Field(description="Content digest (algorithm:hex), if written.")

    @classmethod
    def parse(cls, text: str) -> ImageRef:
        """Parse ``text``; ImageRefError naming what is wrong and the expected form."""
        if not text or any(c.isspace() for c in text):
            raise _fail(text, "empty or contains whitespace")
        name_tag, _, digest = text.partition("@")
        if "@" in text and DIGEST_PATTERN.fullmatch(digest) is None:
            raise _fail(text, f"digest {digest!r} is not ALGORITHM:HEX (e.g. sha256:<64 hex>)")
        host, path = cls._split_host(text, name_tag)
        path, tag = cls._split_tag(text, path)
        components = path.split("/")
        bad = next((c for c in components if _COMPONENT.fullmatch(c) is None), None)
        if bad is not None:
            raise _fail(
                text,
                f"path component {bad!r} is not lower-case letters and digits joined by "
                "'.', '_', '__' or '-'",
            )
        registry = DOCKER_HUB if host is None or host.lower() in _HUB_ALIASES else host.lower()
        if registry == DOCKER_HUB and len(components) == 1:
            path = f"library/{path}"
        name = name_tag if tag is None else name_tag[: -len(tag) - 1]
        return cls(
            text=text,
            name=name,
            registry=registry,
            repository=path,
            tag=tag if tag is not None or digest else "latest",
            digest=digest or None,
        )

    @staticmethod
    def _split_host(text: str, name_tag: str) -> tuple[str | None, str]:
        if "#" in name_tag:  # enroot spelling: HOST#PATH
            host, _, path = name_tag.partition("#")
            if _HOST.fullmatch(host) is None:
                raise _fail(text, f"{host!r} before '#' is not a registry host")
            return host, path
        first, sep, rest = name_tag.partition("/")
        if sep and _is_host(first):
            if _HOST.fullmatch(first) is None:
                raise _fail(text, f"registry host {first!r} is not HOST[:PORT]")
            return first, rest
        return None, name_tag

    @staticmethod
    def _split_tag(text: str, path: str) -> tuple[str, str | None]:
        last_slash = path.rfind("/")
        colon = path.rfind(":")
        if colon <= last_slash:
            return path, None
        tag = path[colon + 1 :]
        if TAG_PATTERN.fullmatch(tag) is None:
            raise _fail(text, f"tag {tag!r} is not letters, digits, '_', '.' and '-'")
        return path[:colon], tag

    @property
    def repository_id(self) -> str:
        """``registry/repository``: equal for two references to the same repository."""
        return f"{self.registry}/{self.repository}"

    def same_repository(self, other: ImageRef) -> bool:
        """True when ``other`` names the same repository (tags and digests aside)."""
        return self.repository_id == other.repository_id

    def with_tag(self, tag: str, *, digest: str | None = None) -> str:
        """This reference's repository at ``tag`` (optionally ``@digest``), spelled as written.

        The written digest is dropped (it belongs to the old tag). ImageRefError for a tag
        or digest that is not valid.
        """
        check_tag(tag, where=f"image reference {self.text!r}")
        if digest is not None and DIGEST_PATTERN.fullmatch(digest) is None:
            raise _fail(self.text, f"digest {digest!r} is not ALGORITHM:HEX")
        suffix = f"@{digest}" if digest is not None else ""
        return f"{self.name}:{tag}{suffix}"

    def __str__(self) -> str:
        return self.text
