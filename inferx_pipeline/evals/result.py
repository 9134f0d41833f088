"""``EvalResult``: the stored document of one scored eval point (the sweep's ``eval.json``).

It carries the score and the same identity and provenance keys a throughput RawResult
carries in its ``metadata`` (recipe, fingerprint, SKU, engine, image digest, engine
version, run, attempt, simulated), plus the sha256 of the sample-level output file and
of the harness's own results, so the results layer ingests it with no flags.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from inferx_pipeline.bench.result import MetadataValue
from inferx_pipeline.evals.scores import EvalScore, FilterScore
from inferx_pipeline.strict import FrozenModel

KIND: Literal["inferx-eval"] = "inferx-eval"


class EvalResult(FrozenModel):
    """One eval point's score, identity and provenance."""

    kind: Literal["inferx-eval"] = KIND
    task: str = Field(description="Our task name (catalog/evals.yaml).")
    lm_eval_task: str
    dataset: Literal["host", "shipped"] = Field(description="Which data was scored.")
    filters: tuple[FilterScore, ...] = Field(min_length=1)
    n_original: int = Field(ge=0, description="Documents in the task's test split.")
    n_effective: int = Field(ge=0, description="Documents scored.")
    threshold: float = Field(ge=0, le=1, description="Lowest passing exact match, each filter.")
    threshold_source: str
    passed: bool = Field(description="Every filter reached the threshold.")
    lm_eval_version: str
    finished_at: float = Field(description="Unix seconds the harness finished.")
    metadata: dict[str, MetadataValue] = Field(
        description="Identity and provenance (RawResult metadata keys) and artifact hashes."
    )

    @classmethod
    def of(
        cls,
        score: EvalScore,
        *,
        threshold_source: str,
        finished_at: float,
        metadata: dict[str, MetadataValue],
    ) -> EvalResult:
        """The document of ``score`` with its identity ``metadata``."""
        return cls(
            task=score.task,
            lm_eval_task=score.lm_eval_task,
            dataset=score.dataset,
            filters=score.filters,
            n_original=score.n_original,
            n_effective=score.n_effective,
            threshold=score.threshold,
            threshold_source=threshold_source,
            passed=score.passed,
            lm_eval_version=score.lm_eval_version,
            finished_at=finished_at,
            metadata=metadata,
        )

    @property
    def exact_match(self) -> float:
        """The lowest exact match over the filters (what the threshold judges)."""
        return min(score.exact_match for score in self.filters)
