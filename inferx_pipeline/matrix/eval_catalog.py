"""Eval data (``catalog/evals.yaml``): protocol, tasks, per-family task and threshold.

``EvalCatalog.for_family`` resolves what one model's eval runs: the task, the threshold
every filter's exact match must reach, the answer budget and the context (prompt +
answer) its server must hold, each with its source. The
settings an eval server must not carry are the gate's acceptance-length knobs
(``catalog/gate.yaml`` ``acceptance_knobs``, read on load) plus the other
synthetic-acceptance settings ``evals.yaml`` lists.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from inferx_pipeline.catalog import read_model
from inferx_pipeline.recipes.policy.data import AcceptanceKnobs, cached_policy
from inferx_pipeline.strict import FrozenModel

EVALS_FILE = "evals.yaml"
GATE_FILE = "gate.yaml"


class EvalProtocol(FrozenModel):
    """Generation settings of every eval request."""

    max_tokens: int = Field(alias="max-tokens", gt=0, description="Answer budget, tokens.")
    max_length: int = Field(alias="max-length", gt=0, description="Prompt + answer, tokens.")
    temperature: float = Field(ge=0, description="Sampling temperature (0 = greedy).")
    top_p: float = Field(alias="top-p", gt=0, le=1, description="Nucleus sampling mass.")
    max_retries: int = Field(alias="max-retries", ge=0, description="Retries per request.")
    timeout_s: int = Field(alias="timeout-s", gt=0, description="Per-request timeout, s.")
    source: str


class EvalTask(FrozenModel):
    """One lm-eval task, by our name."""

    lm_eval_task: str = Field(alias="lm-eval-task", description="The harness's task name.")
    dataset: Literal["host", "shipped"] = Field(
        description="host = the host's datasets cache (offline); shipped = evals/data."
    )
    filters: tuple[str, ...] = Field(min_length=1, description="Filters scored (exact match).")
    lm_eval_folder: str | None = Field(
        default=None,
        alias="lm-eval-folder",
        pattern=r"^[A-Za-z0-9_.-]+$",
        description=(
            "A host task's folder under lm-eval's tasks/: the harness indexes only it "
            "(saves ~5 s per eval). None: every built-in task is indexed."
        ),
    )
    source: str

    @model_validator(mode="after")
    def _folder_only_for_host(self) -> EvalTask:
        if self.dataset == "shipped" and self.lm_eval_folder is not None:
            raise ValueError(
                "lm-eval-folder: a shipped task is read from inferx_pipeline/evals/data; "
                "remove the key (it names a built-in task's folder)"
            )
        return self


class ModelEval(FrozenModel):
    """A family's eval: task (None = the default's) and threshold."""

    task: str | None = Field(default=None, description="Task name; None = the default task.")
    threshold: float = Field(ge=0, le=1, description="Lowest passing exact match, each filter.")
    max_tokens: int | None = Field(
        default=None, alias="max-tokens", gt=0, description="Answer budget; None = protocol's."
    )
    max_length: int | None = Field(
        default=None, alias="max-length", gt=0, description="Prompt + answer; None = protocol's."
    )
    num_fewshot: int | None = Field(
        default=None, alias="num-fewshot", ge=0, description="Few-shot examples; None = task's."
    )
    source: str


class SyntheticAcceptance(FrozenModel):
    """Server settings that accept draft tokens unverified: banned on eval servers."""

    argv: tuple[str, ...] = Field(description="Substrings of any argv element.")
    env: tuple[str, ...] = Field(description="Environment variable names.")
    source: str

    def with_knobs(self, knobs: Mapping[str, AcceptanceKnobs]) -> SyntheticAcceptance:
        """These settings plus every engine's acceptance-length knob (``catalog/gate.yaml``
        ``acceptance_knobs``: JSON keys and env names as they are, flags as ``--flag``)."""
        argv, env = list(self.argv), list(self.env)
        for knob in knobs.values():
            argv += [*knob.json_keys, *(f"--{flag}" for flag in knob.flags)]
            env += knob.env
        return self.model_copy(
            update={
                "argv": tuple(dict.fromkeys(argv)),
                "env": tuple(dict.fromkeys(env)),
                "source": f"{self.source}; and catalog/{GATE_FILE} acceptance_knobs",
            }
        )


class ResolvedEval(FrozenModel):
    """What one family's eval runs."""

    task_name: str
    task: EvalTask
    threshold: float
    max_tokens: int
    max_length: int = Field(description="Prompt + answer, tokens: the eval server's least context.")
    num_fewshot: int | None = Field(description="Few-shot examples; None = the task's own.")
    source: str = Field(description="Where the threshold comes from.")


class EvalCatalog(FrozenModel):
    """Everything in ``catalog/evals.yaml``."""

    protocol: EvalProtocol
    tasks: dict[str, EvalTask]
    default: ModelEval
    models: dict[str, ModelEval]
    synthetic_acceptance: SyntheticAcceptance = Field(alias="synthetic-acceptance")

    @model_validator(mode="after")
    def _tasks_known(self) -> EvalCatalog:
        named = {"default": self.default, **{f"models.{k}": v for k, v in self.models.items()}}
        for where, entry in named.items():
            if entry.task is not None and entry.task not in self.tasks:
                raise ValueError(
                    f"{where}.task: got {entry.task!r}; expected one of {sorted(self.tasks)}"
                )
        if self.default.task is None:
            raise ValueError("default.task: required (families without an entry use it)")
        return self

    def for_family(self, family: str) -> ResolvedEval:
        """The eval of model family ``family`` (the default when it has no entry)."""
        entry = self.models.get(family, self.default)
        name = entry.task or self.default.task
        assert name is not None  # checked on load
        return ResolvedEval(
            task_name=name,
            task=self.tasks[name],
            threshold=entry.threshold,
            max_tokens=entry.max_tokens or self.protocol.max_tokens,
            max_length=entry.max_length or self.protocol.max_length,
            num_fewshot=entry.num_fewshot,
            source=entry.source,
        )


def load_eval_catalog(catalog_dir: Path) -> EvalCatalog:
    """Read ``catalog_dir/evals.yaml``, its banned settings joined by the gate's acceptance
    knobs (``catalog_dir/gate.yaml``); CatalogError naming the file if invalid."""
    catalog = read_model(catalog_dir / EVALS_FILE, EvalCatalog, "eval catalog")
    knobs = cached_policy(catalog_dir).acceptance_knobs
    banned = catalog.synthetic_acceptance.with_knobs(knobs)
    return catalog.model_copy(update={"synthetic_acceptance": banned})


@functools.cache
def cached_eval_catalog(catalog_dir: Path) -> EvalCatalog:
    """``load_eval_catalog`` memoized per directory."""
    return load_eval_catalog(catalog_dir)
