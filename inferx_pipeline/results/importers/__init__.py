"""Importers: one per result format, chosen by ``--source`` or by the file's keys."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inferx_pipeline.results.checks import reject
from inferx_pipeline.results.importers.base import Importer
from inferx_pipeline.results.importers.identity import IdentityHints, ImportContext
from inferx_pipeline.results.importers.inferencex import InferencexImporter
from inferx_pipeline.results.importers.inferx import InferxImporter
from inferx_pipeline.results.importers.vllm_bench import VllmBenchImporter
from inferx_pipeline.results.record import Source

# Detection order matters: a RawResult is also a superset of vLLM's keys.
IMPORTERS: dict[Source, Importer] = {
    "inferx": InferxImporter(),
    "inferencex": InferencexImporter(),
    "vllm-bench": VllmBenchImporter(),
}


def importer_for(payload: Mapping[str, Any], source: Source | None) -> Importer:
    """The importer named by ``source``, else the first whose keys match ``payload``.

    Raises ``MalformedArtifactError`` (unknown-format) when none matches.
    """
    if source is not None:
        return IMPORTERS[source]
    for importer in IMPORTERS.values():
        if importer.matches(payload):
            return importer
    keys = ", ".join(sorted(payload)[:8])
    raise reject(
        "unknown-format",
        f"keys ({keys}, ...) match no known format; pass --source {'|'.join(IMPORTERS)}",
    )


__all__ = ["IMPORTERS", "IdentityHints", "ImportContext", "Importer", "importer_for"]
