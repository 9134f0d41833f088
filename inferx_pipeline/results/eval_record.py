"""One stored eval score: ``EvalRecord``, and ``eval_record`` making one of an eval document.

A row carries the identity and provenance a throughput row carries (recipe, fingerprint,
SKU, engine, image digest, engine version, run, attempt, simulated) plus the task, the
judged exact match (the lowest over the task's filters) with its standard error, every
filter's score (``scores``, JSON), the sample counts, the threshold with its source, the
harness version, the sha256 of the sample-level output file and where the score comes
from (``source``: our sweep, or an imported InferenceX artifact). ``server_fingerprint``
is the throughput twin's fingerprint; ``config_id`` (``results.configs``) the
configuration the score judges: the gate marks the throughput rows holding it, whatever
their acceptance mode. Pure: ``results.evals`` writes and reads them.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

from pydantic import Field, ValidationError

from inferx_pipeline.evals.result import EvalResult
from inferx_pipeline.results import checks
from inferx_pipeline.results.configs import config_id
from inferx_pipeline.results.record import PULL_COLUMNS, Source
from inferx_pipeline.strict import FrozenModel

SAMPLES_ARTIFACT = "artifact:eval-samples.jsonl"
ARTIFACT_PREFIX = "artifact:"
# EvalRecord fields read from the document's metadata (the sweep's job_metadata keys).
FROM_METADATA = (
    "recipe_id", "fingerprint", "server_fingerprint", "job_id", "model", "model_family",
    "precision", "sku", "framework", "image", "image_digest", "engine_version", "scenario",
    "isl", "osl", "tp", "ep", "dp_attn", "spec_method", "thinking", "conc", "run_id",
    "attempt", "simulated",
)  # fmt: skip
# Of those, the ones a sweep's metadata leaves out when null (an agentic job has no ISL/OSL);
# the PR marks (record.PULL_COLUMNS) are likewise absent from official runs' metadata.
NULLABLE_METADATA = ("image_digest", "engine_version", "isl", "osl")


class EvalRecord(FrozenModel):
    """One scored eval point, as stored (``tables.EvalRow``)."""

    result_id: str = Field(pattern=r"^[0-9a-f]{64}$")
    recipe_id: str
    fingerprint: str
    server_fingerprint: str
    config_id: str | None = Field(
        pattern=r"^[0-9a-f]{64}$", description="Configuration judged; None = stored before."
    )
    job_id: str
    model: str
    model_family: str
    precision: str
    sku: str
    framework: str
    image: str
    image_digest: str | None
    engine_version: str | None
    scenario: str
    isl: int | None
    osl: int | None
    tp: int = Field(ge=1)
    ep: int = Field(ge=1)
    dp_attn: bool
    spec_method: str
    thinking: str
    conc: int = Field(ge=1)
    task: str
    lm_eval_task: str
    dataset: str
    exact_match: float = Field(ge=0, le=1, description="Lowest exact match over the filters.")
    exact_match_stderr: float = Field(ge=0, description="Its standard error.")
    scores: str = Field(description="JSON: filter -> [exact match, standard error].")
    n_original: int = Field(ge=0)
    n_effective: int = Field(ge=0)
    threshold: float
    threshold_source: str
    passed: bool
    lm_eval_version: str
    run_id: str
    attempt: int = Field(ge=1)
    simulated: bool
    finished_at: datetime
    samples_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    artifact_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    artifacts: str = Field(description="JSON object text: artifact name -> sha256.")
    source: Source = Field(description="inferx (our sweep) or inferencex (imported).")
    pr_number: int | None = Field(
        default=None, ge=1, description="The pull request of an unofficial run; None: official."
    )
    head_sha: str | None = Field(default=None, description="The PR head commit it scored.")
    measured_in: str | None = Field(
        default=None, description="The run that scored it, when this run took it over."
    )


def eval_record(doc: EvalResult, artifact_sha256: str, source: Source = "inferx") -> EvalRecord:
    """The row of the eval document ``doc`` (its blob hashes to ``artifact_sha256``) from
    ``source``: our sweep's, or one built from an imported artifact.

    MalformedArtifactError: ``missing-identity`` naming the configuration fields
    (``configs.CONFIG_FIELDS``) its metadata lacks, ``wrong-type`` when it lacks another
    identity field or the sample file's hash.
    """
    meta = doc.metadata
    judged = min(doc.filters, key=lambda score: score.exact_match)
    identity = {k: meta.get(k) for k in ("recipe_id", "job_id", "fingerprint")}
    digest = json.dumps({**identity, "run": meta.get("run_id"), "attempt": meta.get("attempt")})
    fields = {name: meta.get(name) for name in (*NULLABLE_METADATA, *PULL_COLUMNS)}
    fields |= {name: meta[name] for name in FROM_METADATA if name in meta}
    try:
        return EvalRecord(
            **fields,
            result_id=hashlib.sha256(digest.encode()).hexdigest(),
            config_id=config_id(meta),
            task=doc.task,
            lm_eval_task=doc.lm_eval_task,
            dataset=doc.dataset,
            exact_match=judged.exact_match,
            exact_match_stderr=judged.stderr,
            scores=json.dumps({f.filter: [f.exact_match, f.stderr] for f in doc.filters}),
            n_original=doc.n_original,
            n_effective=doc.n_effective,
            threshold=doc.threshold,
            threshold_source=doc.threshold_source,
            passed=doc.passed,
            lm_eval_version=doc.lm_eval_version,
            finished_at=datetime.fromtimestamp(doc.finished_at, UTC),
            samples_sha256=meta.get(SAMPLES_ARTIFACT),
            artifact_sha256=artifact_sha256,
            artifacts=json.dumps(
                {
                    k.removeprefix(ARTIFACT_PREFIX): v
                    for k, v in sorted(meta.items())
                    if k.startswith(ARTIFACT_PREFIX)
                }
            ),
            source=source,
        )
    except ValidationError as err:
        raise checks.reject("wrong-type", f"eval record does not validate: {err}") from err
