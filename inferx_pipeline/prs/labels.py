"""A pull request's sweep labels -> the mode it runs in, by ``catalog/pr-labels.yaml``.

The catalog file holds each label (``primary`` or ``modifier``, told apart by ``kind``),
its run behaviour as data, the skip marker and the advice for an unlabeled PR, with
their source (InferenceX's workflows). ``pr_mode`` applies InferenceX's rules: two or
more primary labels are a PullRequestError naming them; a head commit message with the
skip marker, or no primary label, is a ``PrIdle`` value the caller reports; otherwise a
``PrRun``. Labels the file does not name are someone else's and are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, model_validator

from inferx_pipeline.catalog import read_model
from inferx_pipeline.errors import PullRequestError
from inferx_pipeline.matrix.evals import EvalMode
from inferx_pipeline.recipes.scenarios import ScenarioKind
from inferx_pipeline.strict import FrozenModel

LABELS_FILE = "pr-labels.yaml"

Trim = Literal["lowest-concurrency", "none"]


class PrimaryLabel(FrozenModel):
    """A label that starts a sweep and says how it runs; a PR carries exactly one."""

    kind: Literal["primary"]
    meaning: str = Field(description="What the label runs, one sentence.")
    canary: bool = Field(description="The canary job runs first; the rest waits for it.")
    fail_fast: bool = Field(alias="fail-fast", description="The first failed job stops the rest.")
    trim: Trim = Field(
        description="lowest-concurrency: each configuration keeps its lowest concurrency."
    )


class ModifierLabel(FrozenModel):
    """A label that changes which eval jobs run, beside one primary label."""

    kind: Literal["modifier"]
    meaning: str = Field(description="What the label changes, one sentence.")
    evals: Literal["only", "all"] = Field(
        description="only: the eval jobs only; all: every eval job the policy can make."
    )


LabelRule = Annotated[PrimaryLabel | ModifierLabel, Field(discriminator="kind")]


class LabelRules(FrozenModel):
    """``catalog/pr-labels.yaml``: every label we act on, the skip marker, the advice."""

    source: str = Field(description="Where the label rules come from.")
    canary_scenarios: tuple[ScenarioKind, ...] = Field(
        alias="canary-scenarios", min_length=1, description="Scenarios a canary may have."
    )
    skip_marker: str = Field(
        alias="skip-marker", min_length=1, description="Head commit message text: no sweep."
    )
    unlabeled: str = Field(min_length=1, description="Advice reported for an unlabeled PR.")
    labels: dict[str, LabelRule] = Field(description="Label name -> its rule.")

    @model_validator(mode="after")
    def _has_primary(self) -> LabelRules:
        if not self.primaries:
            raise ValueError("labels: no label of kind primary; a PR could never run")
        return self

    @property
    def names(self) -> frozenset[str]:
        """Every label we act on (any other label on a PR is ignored)."""
        return frozenset(self.labels)

    @property
    def primaries(self) -> dict[str, PrimaryLabel]:
        """The primary labels, in file order."""
        return {n: r for n, r in self.labels.items() if isinstance(r, PrimaryLabel)}

    @property
    def modifiers(self) -> dict[str, ModifierLabel]:
        """The modifier labels, in file order."""
        return {n: r for n, r in self.labels.items() if isinstance(r, ModifierLabel)}


class PrRun(FrozenModel):
    """A PR that runs: its primary label's behaviour and its modifiers' eval handling."""

    kind: Literal["run"] = "run"
    label: str = Field(description="The primary label.")
    modifiers: tuple[str, ...] = Field(description="Modifier labels, in catalog order.")
    canary: bool
    fail_fast: bool
    trim: Trim
    evals_only: bool = Field(description="Only the eval jobs run.")
    all_evals: bool = Field(description="Every eval job the policy can make.")
    canary_scenarios: tuple[ScenarioKind, ...] = Field(description="Scenarios a canary may have.")

    @property
    def matrix_evals(self) -> EvalMode:
        """The eval mode to build the PR's matrix in (``MatrixRequest.evals``).

        ``all`` for all-evals, ``evals-only`` for evals-only alone, else ``default``; the
        throughput jobs stay in the matrix either way (``pr_plan`` drops them for
        evals-only), as InferenceX's ``all-evals`` label expands selection only.
        """
        if self.all_evals:
            return "all"
        return "evals-only" if self.evals_only else "default"


class PrIdle(FrozenModel):
    """A PR that runs nothing this time: skipped by its head commit, or unlabeled."""

    kind: Literal["skip", "unlabeled"]
    reason: str = Field(description="What to report on the PR.")


PrMode = PrRun | PrIdle


def load_label_rules(catalog_dir: Path) -> LabelRules:
    """Read ``catalog_dir/pr-labels.yaml``; CatalogError naming the file and the field."""
    return read_model(catalog_dir / LABELS_FILE, LabelRules, "pull-request label rules")


def pr_mode(labels: Iterable[str], head_message: str, rules: LabelRules) -> PrMode:
    """The mode a PR with ``labels`` whose head commit says ``head_message`` runs in.

    Raises PullRequestError naming every primary label when there are two or more (even
    with the skip marker: InferenceX rejects the labels first). Labels not in ``rules``
    are ignored. Pure: reads nothing.
    """
    names = set(labels)
    primaries = [name for name in rules.primaries if name in names]
    if len(primaries) > 1:
        raise PullRequestError(
            f"pull request labels: got {len(primaries)} primary sweep labels "
            f"({', '.join(primaries)}); expected exactly one of "
            f"{', '.join(rules.primaries)}; remove all but one"
        )
    if rules.skip_marker in head_message:
        return PrIdle(
            kind="skip",
            reason=f"the head commit's message contains {rules.skip_marker}: no sweep for "
            f"this commit; push a commit without {rules.skip_marker} to run one",
        )
    if not primaries:
        return PrIdle(kind="unlabeled", reason=rules.unlabeled)
    primary = rules.primaries[primaries[0]]
    modifiers = {name: rule for name, rule in rules.modifiers.items() if name in names}
    return PrRun(
        label=primaries[0],
        modifiers=tuple(modifiers),
        canary=primary.canary,
        fail_fast=primary.fail_fast,
        trim=primary.trim,
        evals_only=any(rule.evals == "only" for rule in modifiers.values()),
        all_evals=any(rule.evals == "all" for rule in modifiers.values()),
        canary_scenarios=rules.canary_scenarios,
    )
