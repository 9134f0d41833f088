"""Accuracy-eval selection: which benchmark jobs also get an eval job, by policy data.

Policies live in ``catalog/eval-policy.yaml`` (the file's header explains the rules). A
request names an ``EvalMode``: ``none`` (no evals), ``default`` (InferenceX's default
selection), ``evals-only`` and ``all`` (its ``--evals-only`` and ``--all-evals``). An eval
job is a copy of its benchmark job with ``run_eval=True``, real acceptance (no synthetic
AL), the eval max-num-seqs and a context of at least its eval's max-length
(``catalog/evals.yaml``: prompt + answer); it follows its benchmark job in the matrix. In
the policy's eval-only modes only the eval jobs run (``runnable``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from inferx_pipeline.catalog import Catalog, read_model
from inferx_pipeline.errors import CatalogError, MatrixError
from inferx_pipeline.matrix.eval_catalog import EVALS_FILE, EvalCatalog
from inferx_pipeline.matrix.job import BenchmarkJob, resolve_max_num_seqs
from inferx_pipeline.recipes.scenarios import ScenarioKind
from inferx_pipeline.strict import FrozenModel

EVAL_POLICY_FILE = "eval-policy.yaml"

EvalMode = Literal["none", "default", "evals-only", "all"]
SelectingMode = Literal["default", "evals-only", "all"]
Pick = Literal["median", "highest", "first-highest", "each-conc", "every"]
Topology = Literal["single-node", "multinode"]

# Group-by keys a rule may name -> how to read them from a job.
GROUP_KEYS: dict[str, Callable[[BenchmarkJob], object]] = {
    "model": lambda job: job.model.hf_id,
    "runner": lambda job: job.runner,
    "sku": lambda job: job.sku,
    "framework": lambda job: job.engine.framework,
    "image": lambda job: job.engine.image,
    "precision": lambda job: job.model.precision,
    "isl": lambda job: job.isl,
    "osl": lambda job: job.osl,
    "spec-decoding": lambda job: job.spec.arm,
    "dp-attn": lambda job: job.parallel.dp_attn if job.parallel is not None else None,
    "server": lambda job: job.server_key,
}


class EvalRule(FrozenModel):
    """How jobs of one scenario and topology are picked for an eval."""

    scenario: ScenarioKind = Field(description="Scenario the rule applies to.")
    topology: Topology = Field(description="single-node or multinode jobs.")
    seq_lens: tuple[tuple[int, int], ...] | None = Field(
        default=None,
        alias="seq-lens",
        description="(isl, osl) pairs that get evals (fixed-seq-len); none = every one.",
    )
    min_conc: int = Field(default=1, alias="min-conc", ge=1, description="Lowest eligible conc.")
    group_by: tuple[str, ...] = Field(
        default=(), alias="group-by", description="Job keys that form one group; () = one group."
    )
    picks: tuple[Pick, ...] = Field(min_length=1, description="Which jobs of a group get evals.")

    def applies_to(self, job: BenchmarkJob) -> bool:
        """True when ``job`` has this rule's scenario and topology."""
        topology: Topology = "multinode" if job.multinode else "single-node"
        return job.scenario == self.scenario and topology == self.topology

    def eligible(self, job: BenchmarkJob) -> bool:
        """True when ``job`` (of this rule's kind) passes the seq-len and conc filters."""
        if job.conc < self.min_conc:
            return False
        return self.seq_lens is None or (job.isl, job.osl) in self.seq_lens


class EvalModes(FrozenModel):
    """The rules of each selecting mode; at most one rule per scenario and topology."""

    default: tuple[EvalRule, ...] = Field(description="inferx matrix --evals.")
    evals_only: tuple[EvalRule, ...] = Field(alias="evals-only", description="--evals-only.")
    all: tuple[EvalRule, ...] = Field(description="--all-evals.")

    @model_validator(mode="after")
    def _one_rule_per_kind(self) -> EvalModes:
        for mode in ("default", "evals-only", "all"):
            kinds = [(r.scenario, r.topology) for r in self.rules(mode)]
            repeated = sorted({kind for kind in kinds if kinds.count(kind) > 1})
            if repeated:
                raise ValueError(f"{mode}: more than one rule for {repeated}")
        return self

    def rules(self, mode: SelectingMode) -> tuple[EvalRule, ...]:
        """The rules of ``mode``."""
        return {"default": self.default, "evals-only": self.evals_only, "all": self.all}[mode]

    def rule_for(self, job: BenchmarkJob, mode: SelectingMode) -> tuple[int, EvalRule] | None:
        """(index, rule) of the rule of ``mode`` that applies to ``job``; None = no evals."""
        for index, rule in enumerate(self.rules(mode)):
            if rule.applies_to(job):
                return index, rule
        return None


class EvalPolicy(FrozenModel):
    """One named eval-selection policy: rules per mode."""

    source: str = Field(description="Where the rules come from.")
    modes: EvalModes = Field(description="Rules per selecting mode.")


class EvalPolicies(FrozenModel):
    """Every eval policy, by name, and the modes that run evals only."""

    source: str = Field(description="Where the policies come from.")
    eval_only_modes: tuple[SelectingMode, ...] = Field(
        alias="eval-only-modes", description="Modes that run only the eval jobs."
    )
    policies: dict[str, EvalPolicy]

    def policy(self, name: str) -> EvalPolicy:
        """The policy called ``name``; MatrixError listing the known ones otherwise."""
        try:
            return self.policies[name]
        except KeyError as err:
            raise MatrixError(
                f"eval policy {name!r} not in catalog/{EVAL_POLICY_FILE}; "
                f"known: {', '.join(sorted(self.policies))}"
            ) from err

    def eval_only(self, mode: EvalMode) -> bool:
        """True when ``mode`` runs the eval jobs only (no throughput points)."""
        return mode in self.eval_only_modes


def load_eval_policies(catalog_dir: Path) -> EvalPolicies:
    """Read ``catalog_dir/eval-policy.yaml``; CatalogError naming the file if invalid."""
    path = catalog_dir / EVAL_POLICY_FILE
    policies = read_model(path, EvalPolicies, "eval policies")
    for name, policy in policies.policies.items():
        for mode in ("default", "evals-only", "all"):
            for index, rule in enumerate(policy.modes.rules(mode)):
                unknown = set(rule.group_by) - set(GROUP_KEYS)
                if unknown:
                    raise CatalogError(
                        f"{path}: policies.{name}.modes.{mode}[{index}].group-by: unknown "
                        f"keys {sorted(unknown)}; valid: {', '.join(sorted(GROUP_KEYS))}"
                    )
    return policies


def eval_picks(
    jobs: Sequence[BenchmarkJob],
    policies: EvalPolicies,
    recipe_policies: Mapping[str, str | None],
    mode: SelectingMode,
) -> set[int]:
    """Indices of the benchmark jobs selected for an eval in ``mode``.

    ``recipe_policies`` maps recipe id -> policy name, or None for recipes that never
    run evals.
    """
    groups: dict[tuple[object, ...], list[int]] = defaultdict(list)
    rules: dict[tuple[object, ...], EvalRule] = {}
    for index, job in enumerate(jobs):
        name = recipe_policies.get(job.recipe_id)
        if name is None or job.run_eval:
            continue
        found = policies.policy(name).modes.rule_for(job, mode)
        if found is None or not found[1].eligible(job):
            continue
        rule_index, rule = found
        key = (name, rule_index, *(GROUP_KEYS[k](job) for k in rule.group_by))
        groups[key].append(index)
        rules[key] = rule
    picked: set[int] = set()
    for key, indices in groups.items():
        for pick in rules[key].picks:
            picked |= _PICKS[pick]([jobs[i].conc for i in indices], indices)
    return picked


def _at(target: Callable[[list[int]], int]) -> Callable[[list[int], list[int]], set[int]]:
    def pick(concs: list[int], indices: list[int]) -> set[int]:
        chosen = target(sorted(set(concs)))
        return {i for i, conc in zip(indices, concs, strict=True) if conc == chosen}

    return pick


def _first_highest(concs: list[int], indices: list[int]) -> set[int]:
    # max() keeps the first of equal values: the earliest job in matrix order.
    return {max(zip(indices, concs, strict=True), key=lambda pair: pair[1])[0]}


def _each_conc(concs: list[int], indices: list[int]) -> set[int]:
    first: dict[int, int] = {}
    for index, conc in zip(indices, concs, strict=True):
        first.setdefault(conc, index)
    return set(first.values())


_PICKS: dict[Pick, Callable[[list[int], list[int]], set[int]]] = {
    "median": _at(lambda concs: concs[len(concs) // 2]),
    "highest": _at(lambda concs: concs[-1]),
    "first-highest": _first_highest,
    "each-conc": _each_conc,
    "every": lambda concs, indices: set(indices),
}


def eval_max_model_len(job: BenchmarkJob, evals: EvalCatalog, catalog: Catalog) -> int | None:
    """The context, tokens, an eval of benchmark ``job`` is served with: the job's raised to
    its family's eval max-length (``catalog/evals.yaml``), never lowered; None (the engine's
    own: the model's native context) stays None.

    MatrixError when the model's native context (``catalog/models.yaml`` max_context) is
    below that max-length: capping it would score another protocol than the data says.
    """
    family = job.model.family
    needed = evals.for_family(family).max_length
    arch = catalog.models.get(family)
    native = arch.max_context if arch is not None else None
    if native is not None and native < needed:
        where = f"models.{family}.max-length" if family in evals.models else "protocol.max-length"
        raise MatrixError(
            f"{job.job_id}: an eval needs a context of {needed} tokens (catalog/{EVALS_FILE} "
            f"{where}), but {family} serves at most {native} (catalog/models.yaml "
            f"models.{family}.max_context); set catalog/{EVALS_FILE} "
            f"models.{family}.max-length to at most {native}"
        )
    if job.max_model_len is None:
        return None
    return max(job.max_model_len, needed)


def eval_job(job: BenchmarkJob, *, evals: EvalCatalog, catalog: Catalog) -> BenchmarkJob:
    """The eval twin of benchmark ``job``: run_eval, real acceptance, eval max-num-seqs,
    and the eval's context (``eval_max_model_len``; MatrixError when the model lacks it)."""
    spec = job.spec
    acceptance = "none" if spec.method == "none" else "real"
    return job.evolve(
        run_eval=True,
        spec=spec.model_copy(update={"acceptance": acceptance, "target_al": None}),
        max_num_seqs=resolve_max_num_seqs(job.engine.max_num_seqs_rule, job.conc, is_eval=True),
        max_model_len=eval_max_model_len(job, evals, catalog),
    )


def with_evals(
    jobs: Sequence[BenchmarkJob],
    policies: EvalPolicies,
    recipe_policies: Mapping[str, str | None],
    mode: SelectingMode,
    *,
    evals: EvalCatalog,
    catalog: Catalog,
) -> list[BenchmarkJob]:
    """``jobs`` with each job selected in ``mode`` followed by its eval twin."""
    picked = eval_picks(jobs, policies, recipe_policies, mode)
    out: list[BenchmarkJob] = []
    for index, job in enumerate(jobs):
        out.append(job)
        if index in picked:
            out.append(eval_job(job, evals=evals, catalog=catalog))
    return out


def runnable(jobs: Sequence[BenchmarkJob], eval_only: bool) -> list[BenchmarkJob]:
    """The jobs a sweep runs: only the eval jobs when ``eval_only``, else all of them."""
    return [job for job in jobs if job.run_eval or not eval_only]
