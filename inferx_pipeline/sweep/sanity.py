"""Result sanity of a finished sweep: each point re-judged under the current policy.

The runner judges every point when it is measured; a reused point was judged under
the policy of its day. ``check_points`` judges every outcome of a report again (success
rate, realized acceptance length against the synthetic target) and flags failures
that carry no explanation, so a partition's asset check says whether its numbers hold.
"""

from __future__ import annotations

from collections.abc import Sequence

from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.strict import FrozenModel
from inferx_pipeline.sweep.report import SweepReport
from inferx_pipeline.sweep.status import SweepPolicy, judge


class PointProblem(FrozenModel):
    """One point that does not hold up, and why."""

    job_id: str
    problem: str


def check_points(
    report: SweepReport, jobs: Sequence[BenchmarkJob], policy: SweepPolicy
) -> list[PointProblem]:
    """Problems of ``report``'s outcomes (pure); empty when every point holds.

    Good outcomes (ok, reused) are judged again from their RawResult; failed outcomes
    count as explained when they carry a message.
    """
    target = {(j.fingerprint, j.conc): j.spec.target_al for j in jobs}
    problems = []
    for outcome in report.outcomes:
        if not outcome.good:
            if not outcome.message:
                problems.append(PointProblem(job_id=outcome.job_id, problem=outcome.status))
            continue
        if outcome.result is None:
            problems.append(PointProblem(job_id=outcome.job_id, problem="no result recorded"))
            continue
        verdict = judge(
            outcome.result, target_al=target[(outcome.fingerprint, outcome.conc)], policy=policy
        )
        if verdict.status != "ok":
            problem = f"{verdict.status}: {verdict.message}"
            problems.append(PointProblem(job_id=outcome.job_id, problem=problem))
    return problems
