"""The eval-threshold checks: a real score below its threshold fails, a simulated one warns.

The simulator answers eval questions with filler (or from an answer key, partly wrong by
choice), so its scores say nothing about a model: one below its threshold is expected and
shows as a warning whose description says so. A score of a real engine below its
threshold fails the check (severity ERROR), whatever simulated scores sit beside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import dagster as dg
from pydantic import Field

from inferx_pipeline.defs.metadata import markdown_table
from inferx_pipeline.strict import FrozenModel

# Said by every eval-threshold check's spec: what a simulated score below threshold means.
SIMULATED_EVALS = (
    "A simulated score below its threshold warns (the simulator answers with filler or a "
    "partial answer key: it is expected to score low); a real engine's fails."
)


class BelowThreshold(FrozenModel):
    """One eval score below its threshold."""

    job: str = Field(description="The eval job (recipe / scenario / config / conc).")
    task: str
    score: float = Field(description="Exact match, the lowest over the task's filters.")
    threshold: float
    simulated: bool = Field(description="Scored on the simulator, not a real engine.")


def threshold_check(
    name: str, below: Sequence[BelowThreshold], counts: Mapping[str, int]
) -> dg.AssetCheckResult:
    """Check ``name``: passes with nothing ``below``; warns when every score below is
    simulated; fails (ERROR) when any is real. ``counts`` are shown as int metadata."""
    real = [score for score in below if not score.simulated]
    rows = ((b.job, b.task, b.score, b.threshold, "yes" if b.simulated else "no") for b in below)
    return dg.AssetCheckResult(
        check_name=name,
        passed=not below,
        severity=dg.AssetCheckSeverity.WARN if below and not real else dg.AssetCheckSeverity.ERROR,
        description=_describe(len(below), len(real)),
        metadata={
            "below_threshold": dg.MetadataValue.md(
                markdown_table(("eval job", "task", "score", "threshold", "simulated"), rows)
            ),
            "simulated_below": dg.MetadataValue.int(len(below) - len(real)),
            **{key: dg.MetadataValue.int(value) for key, value in counts.items()},
        },
    )


def _describe(below: int, real: int) -> str:
    if not below:
        return "Every eval score reaches its threshold."
    if not real:
        return (
            f"{below} eval score(s) below threshold, all simulated: expected, since the "
            "simulator does not answer as a model does (not a model's accuracy)."
        )
    return (
        f"{real} eval score(s) of a real engine below threshold"
        + (f", and {below - real} simulated" if below > real else "")
        + "."
    )
