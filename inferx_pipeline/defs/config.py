"""Run config of a sweep run: what a person chooses in the launchpad, and its run tags.

``SweepConfig`` is the sweep asset's config. Every field is optional: a click on
"Materialize" measures with the launcher resource's values (reusing good points),
while the launchpad ("Open launchpad" on the same button) offers ``force``, fresh
point sizes and the eval mode (``inferx sweep``'s ``--evals`` flags) one edit away.
Whatever launched a run (UI, sensor, CLI, backfill), the asset records the launcher, the
effective options and the project root as run tags.
"""

from __future__ import annotations

from collections.abc import Mapping

import dagster as dg
import orjson
from pydantic import Field

from inferx_pipeline.defs.tags import (
    LAUNCHER_TAG,
    OPTIONS_TAG,
    REASON_TAG,
    ROOT_TAG,
    SKU_TAG,
)
from inferx_pipeline.matrix.evals import EvalMode
from inferx_pipeline.sweep.report import SweepOptions

# Options a run records in its tags (the rest are constant per deployment).
RECORDED = frozenset(
    {"prompts_per_conc", "num_prompts", "seed", "warmup_prompts", "max_turns", "force"}
)


class SweepConfig(dg.Config):
    """Choices for one sweep run; unset fields keep the launcher resource's values."""

    force: bool = Field(
        default=False, description="Measure every point again, even one with a good result."
    )
    seed: int | None = Field(default=None, description="Dataset seed (a new seed, new requests).")
    prompts_per_conc: int | None = Field(
        default=None, ge=1, description="Measured requests per unit of concurrency."
    )
    num_prompts: int | None = Field(
        default=None, ge=1, description="Measured requests per point, whatever the concurrency."
    )
    warmup_prompts: int | None = Field(
        default=None, ge=0, description="Requests sent once after health, before the first point."
    )
    evals: EvalMode = Field(
        default="none",
        description="Eval jobs of the cells (catalog/eval-policy.yaml): none; default (after "
        "their throughput points); evals-only or all (eval jobs only), as inferx sweep "
        "--evals, --evals-only and --all-evals.",
    )

    def options(self, base: SweepOptions) -> SweepOptions:
        """``base`` with this run's choices applied (``force`` adds, never removes)."""
        chosen = self.model_dump(exclude={"force", "evals"}, exclude_none=True)
        return base.model_copy(update={**chosen, "force": base.force or self.force})


def run_tags(*, sku: str, launcher: str, root: str, options: SweepOptions) -> dict[str, str]:
    """Tags recording how a sweep run measured: SKU, launcher, root and the options."""
    shown = options.model_dump(mode="json", include=set(RECORDED), exclude_none=True)
    return {
        SKU_TAG: sku,
        LAUNCHER_TAG: launcher,
        ROOT_TAG: root,
        OPTIONS_TAG: orjson.dumps(shown, option=orjson.OPT_SORT_KEYS).decode(),
    }


def missing_reason(tags: Mapping[str, str]) -> dict[str, str]:
    """``inferx/reason: ui`` for a run that says no reason (launched from the UI)."""
    return {} if REASON_TAG in tags else {REASON_TAG: "ui"}
