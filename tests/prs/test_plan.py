"""A PR's plan on the seed recipes: canary first, trim, evals-only, all-evals, fail-fast."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.prs.labels import LabelRules, PrRun, pr_mode
from inferx_pipeline.prs.plan import pr_plan
from inferx_pipeline.prs.scope import pr_scope
from tests.prs.conftest import SEEDS

DSR1_ATOM = "recipes/dsr1/dsr1-fp8-mi355x-atom.yaml"


def _mode(rules: LabelRules, *labels: str) -> PrRun:
    mode = pr_mode(labels, "Bump the image", rules)
    assert isinstance(mode, PrRun)
    return mode


def _jobs(tree: Path, recipe: str, mode: PrRun) -> tuple[BenchmarkJob, ...]:
    return pr_scope(tree, [recipe], evals=mode.matrix_evals).jobs


@pytest.mark.parametrize("recipe", sorted(SEEDS))
def test_full_sweep_fail_fast_runs_the_canary_first(
    recipe: str, head_tree: Path, rules: LabelRules
) -> None:
    mode = _mode(rules, "full-sweep-fail-fast")
    jobs = _jobs(head_tree, recipe, mode)
    plan = pr_plan(jobs, mode)

    assert len(plan.jobs) == SEEDS[recipe]
    canary = plan.canary
    assert canary is not None and plan.jobs[0] is canary
    assert not canary.run_eval and not canary.multinode
    candidates = [job for job in jobs if not job.run_eval and not job.multinode]
    lowest = min(job.conc for job in candidates)
    assert canary.conc == lowest
    assert canary.job_id == min(job.job_id for job in candidates if job.conc == lowest)
    assert list(plan.rest) == [job for job in jobs if job is not canary]  # matrix order
    assert (plan.fail_fast, plan.label, plan.modifiers) == (True, "full-sweep-fail-fast", ())
    assert plan.describe() == (
        f"full-sweep-fail-fast: {SEEDS[recipe]} jobs, canary {canary.job_id} first, then "
        f"{SEEDS[recipe] - 1} more; stop at the first failure"
    )


def test_a_tie_for_the_canary_goes_to_the_smallest_job_id(
    head_tree: Path, rules: LabelRules
) -> None:
    mode = _mode(rules, "full-sweep-enabled")
    jobs = _jobs(head_tree, "recipes/minimaxm3/minimaxm3-fp8-mi325x-vllm-agentic-mtp.yaml", mode)
    at_one = sorted(job.job_id for job in jobs if job.conc == 1)
    assert len(at_one) > 1  # the seed has several configurations at concurrency 1
    plan = pr_plan(tuple(reversed(jobs)), mode)
    assert plan.canary is not None and plan.canary.job_id == at_one[0]
    assert plan.fail_fast is False


@pytest.mark.parametrize(
    "label", ["full-sweep-fail-fast-no-canary", "non-canary-full-sweep-enabled"]
)
def test_labels_without_canary_keep_matrix_order(
    label: str, head_tree: Path, rules: LabelRules
) -> None:
    mode = _mode(rules, label)
    jobs = _jobs(head_tree, "recipes/qwen3.5/qwen3.5-fp8-mi300x-sglang-agentic-mtp.yaml", mode)
    plan = pr_plan(jobs, mode)
    assert plan.canary is None
    assert plan.jobs == jobs
    assert plan.fail_fast is (label == "full-sweep-fail-fast-no-canary")


@pytest.mark.parametrize("recipe", sorted(SEEDS))
def test_sweep_enabled_keeps_each_configuration_at_its_lowest_concurrency(
    recipe: str, head_tree: Path, rules: LabelRules
) -> None:
    mode = _mode(rules, "sweep-enabled")
    jobs = _jobs(head_tree, recipe, mode)
    plan = pr_plan(jobs, mode)

    by_config: dict[str, list[int]] = defaultdict(list)
    for job in jobs:
        by_config[job.fingerprint].append(job.conc)
    assert plan.canary is None and plan.fail_fast is False
    assert len(plan.jobs) == len(by_config) < len(jobs)
    assert {job.fingerprint: job.conc for job in plan.jobs} == {
        fingerprint: min(concs) for fingerprint, concs in by_config.items()
    }
    assert [job.job_id for job in plan.jobs] == [job.job_id for job in jobs if job in plan.jobs]


def test_sweep_enabled_counts_on_the_seeds(head_tree: Path, rules: LabelRules) -> None:
    mode = _mode(rules, "sweep-enabled")
    counts = {r: len(pr_plan(_jobs(head_tree, r, mode), mode).jobs) for r in sorted(SEEDS)}
    assert sorted(counts.values()) == [1, 1, 2, 5]


def test_evals_only_keeps_the_eval_jobs_and_no_canary(head_tree: Path, rules: LabelRules) -> None:
    mode = _mode(rules, "full-sweep-fail-fast", "evals-only")
    jobs = _jobs(head_tree, DSR1_ATOM, mode)
    plan = pr_plan(jobs, mode)
    assert len(plan.jobs) == 2 and all(job.run_eval for job in plan.jobs)
    assert plan.canary is None  # a canary is never an eval job
    assert plan.describe() == (
        "full-sweep-fail-fast + evals-only: 2 jobs, no canary; stop at the first failure"
    )


def test_evals_only_on_an_agentic_seed_takes_the_policys_agentic_eval(
    head_tree: Path, rules: LabelRules
) -> None:
    mode = _mode(rules, "full-sweep-enabled", "evals-only")
    recipe = "recipes/minimaxm3/minimaxm3-fp8-mi325x-vllm-agentic-mtp.yaml"
    plan = pr_plan(_jobs(head_tree, recipe, mode), mode)
    assert [job.run_eval for job in plan.jobs] == [True]


def test_all_evals_adds_every_eval_beside_the_throughput(
    head_tree: Path, rules: LabelRules
) -> None:
    default = _mode(rules, "full-sweep-fail-fast")
    every = _mode(rules, "full-sweep-fail-fast", "all-evals")
    plain = pr_plan(_jobs(head_tree, DSR1_ATOM, default), default)
    wide = pr_plan(_jobs(head_tree, DSR1_ATOM, every), every)
    assert [sum(j.run_eval for j in p.jobs) for p in (plain, wide)] == [2, 6]
    assert len(wide.jobs) == 12 and wide.canary is not None and not wide.canary.run_eval
    both = _mode(rules, "full-sweep-fail-fast", "evals-only", "all-evals")
    only = pr_plan(_jobs(head_tree, DSR1_ATOM, both), both)
    assert len(only.jobs) == 6 and all(job.run_eval for job in only.jobs)


def test_nothing_to_run(rules: LabelRules) -> None:
    plan = pr_plan((), _mode(rules, "full-sweep-fail-fast"))
    assert plan.canary is None and plan.jobs == ()
    assert plan.describe() == "full-sweep-fail-fast: nothing to run"
