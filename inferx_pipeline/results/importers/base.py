"""What every importer does: recognise its format and map one JSON object to a record."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from inferx_pipeline.results.importers.identity import ImportContext
from inferx_pipeline.results.record import ResultRecord, Source


class Importer(Protocol):
    """One foreign or native result format."""

    kind: Source

    def matches(self, payload: Mapping[str, Any]) -> bool:
        """Whether ``payload``'s keys look like this format (for ``--source`` auto)."""
        ...

    def to_record(
        self, payload: Mapping[str, Any], *, artifact_sha256: str, context: ImportContext
    ) -> ResultRecord:
        """Map ``payload``; raises ``MalformedArtifactError`` with a reason code."""
        ...
