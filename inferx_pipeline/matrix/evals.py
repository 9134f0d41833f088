"""Accuracy-eval selection: which benchmark jobs also get an eval job, by a policy in data.

Policies live in ``catalog/eval-policy.yaml``. An eval job is a copy of its benchmark job
with ``run_eval=True``, real acceptance (no synthetic AL) and the eval max-num-seqs; it
follows its benchmark job in the matrix.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import Field

from inferx_pipeline.catalog import read_model
from inferx_pipeline.errors import CatalogError, MatrixError
from inferx_pipeline.matrix.job import BenchmarkJob, resolve_max_num_seqs
from inferx_pipeline.recipes.scenarios import ScenarioKind
from inferx_pipeline.strict import FrozenModel

EVAL_POLICY_FILE = "eval-policy.yaml"

# Group-by keys a policy may name -> how to read them from a job.
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
}


class EvalPolicy(FrozenModel):
    """One named eval-selection rule."""

    source: str = Field(description="Where the rule comes from.")
    scenarios: tuple[ScenarioKind, ...] = Field(description="Scenarios that get evals.")
    seq_lens: tuple[tuple[int, int], ...] = Field(
        alias="seq-lens", description="(isl, osl) pairs that get evals (fixed-seq-len)."
    )
    min_conc: int = Field(alias="min-conc", ge=1, description="Lowest eligible concurrency.")
    group_by: tuple[str, ...] = Field(alias="group-by", description="Single-node group keys.")
    single_node_picks: tuple[Literal["median", "max"], ...] = Field(
        alias="single-node-picks", description="Concurrencies picked in each single-node group."
    )
    multinode_pick: Literal["max"] = Field(
        alias="multinode-pick", description="Concurrency picked per multinode server."
    )


class EvalPolicies(FrozenModel):
    """Every eval policy, by name."""

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


def load_eval_policies(catalog_dir: Path) -> EvalPolicies:
    """Read ``catalog_dir/eval-policy.yaml``; CatalogError naming the file if invalid."""
    path = catalog_dir / EVAL_POLICY_FILE
    policies = read_model(path, EvalPolicies, "eval policies")
    for name, policy in policies.policies.items():
        unknown = set(policy.group_by) - set(GROUP_KEYS)
        if unknown:
            raise CatalogError(
                f"{path}: policies.{name}.group-by: unknown keys {sorted(unknown)}; "
                f"valid: {', '.join(sorted(GROUP_KEYS))}"
            )
    return policies


def eval_picks(
    jobs: Sequence[BenchmarkJob], policies: EvalPolicies, modes: Mapping[str, str | None]
) -> set[int]:
    """Indices of the benchmark jobs the policies select for an eval.

    ``modes`` maps recipe id -> policy name, or None for recipes that never run evals.
    """
    single: dict[tuple[object, ...], list[int]] = defaultdict(list)
    multi: dict[tuple[str, str], list[int]] = defaultdict(list)
    for index, job in enumerate(jobs):
        name = modes.get(job.recipe_id)
        if name is None or job.run_eval:
            continue
        policy = policies.policy(name)
        if not _eligible(job, policy):
            continue
        if job.multinode:
            multi[(name, job.server_key)].append(index)
        else:
            key = (name, *(GROUP_KEYS[k](job) for k in policy.group_by))
            single[key].append(index)
    picked: set[int] = set()
    for key, indices in single.items():
        picked |= _single_picks(jobs, indices, policies.policy(str(key[0])))
    for indices in multi.values():
        picked.add(max(indices, key=lambda i: jobs[i].conc))
    return picked


def _eligible(job: BenchmarkJob, policy: EvalPolicy) -> bool:
    if job.scenario not in policy.scenarios or job.conc < policy.min_conc:
        return False
    return job.scenario != "fixed-seq-len" or (job.isl, job.osl) in policy.seq_lens


def _single_picks(jobs: Sequence[BenchmarkJob], indices: list[int], policy: EvalPolicy) -> set[int]:
    concs = sorted({jobs[i].conc for i in indices})
    targets = {
        concs[len(concs) // 2] if pick == "median" else concs[-1]
        for pick in policy.single_node_picks
    }
    return {i for i in indices if jobs[i].conc in targets}


def eval_job(job: BenchmarkJob) -> BenchmarkJob:
    """The eval twin of benchmark ``job``: run_eval, real acceptance, eval max-num-seqs."""
    spec = job.spec
    acceptance = "none" if spec.method == "none" else "real"
    return job.evolve(
        run_eval=True,
        spec=spec.model_copy(update={"acceptance": acceptance, "target_al": None}),
        max_num_seqs=resolve_max_num_seqs(job.engine.max_num_seqs_rule, job.conc, is_eval=True),
    )


def with_evals(
    jobs: Sequence[BenchmarkJob], policies: EvalPolicies, modes: Mapping[str, str | None]
) -> list[BenchmarkJob]:
    """``jobs`` with each selected job followed by its eval twin."""
    picked = eval_picks(jobs, policies, modes)
    out: list[BenchmarkJob] = []
    for index, job in enumerate(jobs):
        out.append(job)
        if index in picked:
            out.append(eval_job(job))
    return out
