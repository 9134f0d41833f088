"""Our own RawResult JSON (``RawResult.model_dump_json(by_alias=True)``).

The measurement keys are vLLM's (see ``normalize``); the identity the sweep runner
knows travels in ``metadata`` under ``JobIdentity`` field names (``recipe_id``,
``sku``, ``tp`` ...) plus ``run_id``, ``attempt``, ``simulated`` and ``official``, and
for an unofficial run its ``pr_number`` and ``head_sha`` (``measured_in`` names the run
that measured a point this run took over unchanged).
Flags given to ``inferx results ingest`` fill or override them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inferx_pipeline.results.importers.identity import (
    IDENTITY_FIELDS,
    ImportContext,
    resolve_identity,
    resolve_run,
)
from inferx_pipeline.results.normalize import normalize
from inferx_pipeline.results.record import PULL_COLUMNS, ResultRecord, Scenario, Source

# RawResult dataset.kind -> record scenario
SCENARIOS: dict[str, Scenario] = {
    "random": "fixed-seq-len",
    "prefix-repetition": "fixed-seq-len",
    "agentic": "agentic-coding",
}
RUN_KEYS = ("run_id", "attempt", "simulated", "official")
# Where the point's server ran, when the sweep's launcher was Slurm.
SLURM_KEYS = ("slurm_job_id", "slurm_cluster")
# The sweep names each sibling artifact of a result in its metadata as "artifact:<name>".
ARTIFACT_PREFIX = "artifact:"
RESULT_ARTIFACT = "result.json"


class InferxImporter:
    """RawResult JSON written by ``inferx bench`` and the sweep runner."""

    kind: Source = "inferx"

    def matches(self, payload: Mapping[str, Any]) -> bool:
        return "schema_version" in payload and "invalid_reasons" in payload

    def to_record(
        self, payload: Mapping[str, Any], *, artifact_sha256: str, context: ImportContext
    ) -> ResultRecord:
        metadata = payload.get("metadata")
        meta: Mapping[str, Any] = metadata if isinstance(metadata, Mapping) else {}
        identity = resolve_identity({**_from_payload(payload), **_identity_meta(meta)}, context)
        run = resolve_run(
            {k: meta.get(k) for k in RUN_KEYS},
            context,
            artifact_sha256=artifact_sha256,
            default_official=False,
        )
        run = run.model_copy(
            update={
                "artifacts": artifact_hashes(meta, artifact_sha256),
                **allocation(meta),
                **{key: meta.get(key) or None for key in PULL_COLUMNS},
            }
        )
        return normalize(payload, identity, run, artifact_sha256=artifact_sha256, source=self.kind)


def _from_payload(payload: Mapping[str, Any]) -> dict[str, Any]:
    dataset = payload.get("dataset")
    data: Mapping[str, Any] = dataset if isinstance(dataset, Mapping) else {}
    scenario = SCENARIOS.get(str(data.get("kind")), "fixed-seq-len")
    fixed = scenario == "fixed-seq-len"
    return {
        "model": payload.get("model_id"),
        "conc": payload.get("max_concurrency"),
        "scenario": scenario,
        "isl": data.get("input_len") if fixed else None,
        "osl": data.get("output_len") if fixed else None,
    }


def _identity_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    return {k: meta[k] for k in IDENTITY_FIELDS if k in meta}


def allocation(meta: Mapping[str, Any]) -> dict[str, str | None]:
    """The Slurm job id and cluster the sweep recorded with the point; None off Slurm."""
    return {key: str(meta[key]) if meta.get(key) else None for key in SLURM_KEYS}


def artifact_hashes(meta: Mapping[str, Any], result_sha256: str) -> dict[str, str]:
    """Artifact name -> sha256 of the point's blobs: the result itself and its siblings."""
    siblings = {
        key.removeprefix(ARTIFACT_PREFIX): value
        for key, value in meta.items()
        if key.startswith(ARTIFACT_PREFIX) and isinstance(value, str)
    }
    return {**siblings, RESULT_ARTIFACT: result_sha256}
