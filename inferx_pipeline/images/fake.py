"""An in-memory ``RegistryClient`` for other layers' tests (sensors, backfills, the CLI).

::

    registry = FakeRegistry({"vllm/vllm-openai": {"nightly-a": "sha256:..."}})
    registry.push("vllm/vllm-openai", "nightly-b")      # a new tag appears
    Registries(clients={"docker.io": registry})         # serve docker.io names from it

Unknown repositories and tags raise ``RegistryError`` like a real registry's 404. Every
call is recorded in ``calls`` so a test can assert what a sensor asked.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from inferx_pipeline.errors import RegistryError
from inferx_pipeline.images.refs import check_tag


class FakeRegistry:
    """Repositories -> {tag: digest}, held in memory; see the module doc."""

    def __init__(self, images: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self._images: dict[str, dict[str, str]] = {
            repo: dict(tags) for repo, tags in (images or {}).items()
        }
        self.calls: list[tuple[str, ...]] = []

    def push(self, repository: str, tag: str, digest: str | None = None) -> str:
        """Point ``repository:tag`` at ``digest`` (default: derived from the name); returns it."""
        check_tag(tag, where=f"FakeRegistry.push({repository!r})")
        if digest is None:
            digest = "sha256:" + hashlib.sha256(f"{repository}:{tag}".encode()).hexdigest()
        self._images.setdefault(repository, {})[tag] = digest
        return digest

    def tags(self, repository: str) -> list[str]:
        """Tags of ``repository`` in lexical order (as distribution's registry lists them)."""
        self.calls.append(("tags", repository))
        return sorted(self._repository(repository))

    def digest(self, repository: str, tag: str) -> str:
        """The digest ``repository:tag`` was pushed with."""
        self.calls.append(("digest", repository, tag))
        tags = self._repository(repository)
        if tag not in tags:
            raise RegistryError(
                f"fake registry: {repository}:{tag}: MANIFEST_UNKNOWN: manifest unknown; "
                f"expected one of its tags: {', '.join(sorted(tags)) or '(none)'}; push it first"
            )
        return tags[tag]

    def _repository(self, repository: str) -> dict[str, str]:
        if repository not in self._images:
            raise RegistryError(
                f"fake registry: {repository}: NAME_UNKNOWN: repository name not known to "
                f"registry; expected one of: {', '.join(sorted(self._images)) or '(none)'}; "
                "push a tag first"
            )
        return self._images[repository]
