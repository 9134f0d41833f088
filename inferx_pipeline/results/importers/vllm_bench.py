"""``vllm bench serve --save-result`` JSON (also ``benchmarks/benchmark_serving.py``).

The file knows the model (``model_id``) and concurrency (``max_concurrency``, null
when the run was rate-limited instead: pass ``--conc``); the SKU, framework,
precision, parallelism and image come from the ingest flags. Percentile keys exist
only for the percentiles the run asked for (``--metric-percentiles``, default 99),
so p90 columns are often null. ``date`` (host-local, no zone) is taken as UTC.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inferx_pipeline.results.importers.identity import (
    ImportContext,
    resolve_identity,
    resolve_run,
)
from inferx_pipeline.results.normalize import normalize
from inferx_pipeline.results.record import ResultRecord, Source


class VllmBenchImporter:
    """vLLM's benchmark result JSON."""

    kind: Source = "vllm-bench"

    def matches(self, payload: Mapping[str, Any]) -> bool:
        return "model_id" in payload and "total_token_throughput" in payload

    def to_record(
        self, payload: Mapping[str, Any], *, artifact_sha256: str, context: ImportContext
    ) -> ResultRecord:
        derived = {
            "model": payload.get("model_id"),
            "conc": payload.get("max_concurrency"),
            "scenario": "fixed-seq-len",
        }
        identity = resolve_identity(derived, context)
        run = resolve_run({}, context, artifact_sha256=artifact_sha256, default_official=False)
        return normalize(payload, identity, run, artifact_sha256=artifact_sha256, source=self.kind)
