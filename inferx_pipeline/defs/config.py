"""Run config of a sweep run: what a person chooses per run, and the run tags recording it.

``SweepConfig`` is the sweep asset's config and the one place for how each point is
measured (its size, its seed, whether to reuse) and which eval jobs run: the launchpad
shows each field with its default and description. The ``launcher`` resource says only
where servers start (deployment-wide). A click on "Materialize" measures at the
defaults (reusing good points); "Open launchpad" on the same button changes them for
one run; ``inferx materialize`` and ``backfill`` pass their flags here as well.
Whatever launched a run (UI, sensor, CLI, backfill), the asset records the launcher, the
effective options, the validity policy version and the project root as run tags.
"""

from __future__ import annotations

from collections.abc import Mapping

import dagster as dg
import orjson
from pydantic import Field

from inferx_pipeline.defs.tags import (
    LAUNCHER_TAG,
    OPTIONS_TAG,
    POLICY_TAG,
    REASON_TAG,
    ROOT_TAG,
    SKU_TAG,
)
from inferx_pipeline.matrix.evals import EvalMode
from inferx_pipeline.strict import FrozenModel
from inferx_pipeline.sweep.report import SweepOptions

# The library's defaults: a run from the UI measures as `inferx sweep` without flags.
_DEFAULT = SweepOptions()


class SweepConfig(dg.Config):
    """How each point of this run is measured, and which eval jobs it runs."""

    force: bool = Field(
        default=_DEFAULT.force,
        description="Measure every point again, even one with a good result (default: reuse "
        "a good result with the same identity).",
    )
    prompts_per_conc: int = Field(
        default=_DEFAULT.prompts_per_conc,
        ge=1,
        description="Measured requests (agentic: sessions) per unit of concurrency; a point "
        "at concurrency c sends prompts_per_conc x c, unless num_prompts is set.",
    )
    num_prompts: int | None = Field(
        default=_DEFAULT.num_prompts,
        ge=1,
        description="Measured requests per point whatever its concurrency (smoke runs); "
        "unset: prompts_per_conc x concurrency.",
    )
    seed: int = Field(default=_DEFAULT.seed, description="Dataset seed: same seed, same requests.")
    warmup_prompts: int = Field(
        default=_DEFAULT.warmup_prompts,
        ge=0,
        description="Requests sent once per server after health, before its first point.",
    )
    max_turns: int | None = Field(
        default=_DEFAULT.max_turns,
        gt=0,
        description="Agentic replay: cut each session at this turn (unset: whole sessions).",
    )
    think_time_scale: float = Field(
        default=_DEFAULT.think_time_scale,
        ge=0,
        description="Agentic replay: multiplier on the recorded think times (0: none).",
    )
    evals: EvalMode = Field(
        default="none",
        description="Eval jobs of the cells (catalog/eval-policy.yaml): none; default (after "
        "their throughput points); evals-only or all (eval jobs only), as inferx sweep "
        "--evals, --evals-only and --all-evals.",
    )

    @classmethod
    def choices(cls, options: SweepOptions, evals: EvalMode = "none") -> dict[str, object]:
        """The run config of the sweep asset measuring with ``options`` and ``evals``
        (what ``inferx materialize`` and ``backfill`` pass for their flags)."""
        chosen = options.model_dump(mode="json", include=set(CHOSEN))
        return cls.model_validate({**chosen, "evals": evals}).model_dump(mode="json")

    def options(self) -> SweepOptions:
        """The ``SweepOptions`` this run measures with (the rest at the library's defaults)."""
        return SweepOptions.model_validate(self.model_dump(include=set(CHOSEN)))


# The SweepOptions a run chooses; the rest (deadlines, timeouts) are the library's.
CHOSEN = frozenset(SweepConfig.model_fields) - {"evals"}


class PointSize(FrozenModel):
    """The effective values a sweep run measured its points with (its tags, its cells)."""

    options: SweepOptions = Field(description="The run's config applied to the defaults.")
    launcher: str = Field(description="The launcher resource's kind: sim, docker, local, slurm.")
    policy_version: str = Field(
        description="Version of the rules that judge a point (sweep policy + "
        "catalog/bench-validity.yaml; sweep.reuse.policy_version)."
    )
    min_duration_s: float = Field(description="The validity rules' minimum duration, s.")

    def prompts_at(self, conc: int) -> int:
        """Measured requests (agentic: sessions) of a point at concurrency ``conc``."""
        return self.options.num_prompts or self.options.prompts_per_conc * conc


def run_tags(*, sku: str, root: str, point: PointSize) -> dict[str, str]:
    """Tags recording how a sweep run measured: SKU, launcher, root, the options chosen
    (``num_prompts`` null: ``prompts_per_conc`` x concurrency) and the validity policy."""
    shown = point.options.model_dump(mode="json", include=set(CHOSEN))
    return {
        SKU_TAG: sku,
        LAUNCHER_TAG: point.launcher,
        ROOT_TAG: root,
        OPTIONS_TAG: orjson.dumps(shown, option=orjson.OPT_SORT_KEYS).decode(),
        POLICY_TAG: point.policy_version,
    }


def missing_reason(tags: Mapping[str, str]) -> dict[str, str]:
    """``inferx/reason: ui`` for a run that says no reason (launched from the UI)."""
    return {} if REASON_TAG in tags else {REASON_TAG: "ui"}
