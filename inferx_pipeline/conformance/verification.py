"""Real verification of an eval server, checked on the final ServerSpec, never assumed.

An eval scores what the engine answers; an engine that accepts draft tokens at a
synthetic rate answers with unverified tokens. So before an eval runs, its job must be
an eval job with no synthetic acceptance, and the server's final argv and env (what the
launcher will run) must carry none of the engines' synthetic-acceptance settings
(``catalog/evals.yaml`` ``synthetic-acceptance``).
"""

from __future__ import annotations

from inferx_pipeline.errors import EvalError
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.eval_catalog import SyntheticAcceptance
from inferx_pipeline.matrix.job import BenchmarkJob


def synthetic_settings(spec: ServerSpec, banned: SyntheticAcceptance) -> list[str]:
    """The synthetic-acceptance settings in ``spec``: argv elements, then env names."""
    found = [arg for arg in spec.argv if any(marker in arg for marker in banned.argv)]
    return found + [name for name in spec.env if name in banned.env]


def check_real_verification(
    job: BenchmarkJob, spec: ServerSpec, banned: SyntheticAcceptance
) -> None:
    """EvalError unless ``job`` is an eval job whose server ``spec`` verifies for real.

    Fails for a throughput job, a job left with synthetic acceptance or a golden AL, and
    a spec whose argv or env carries a synthetic-acceptance setting (named in the error).
    """
    if not job.run_eval:
        raise EvalError(f"{job.job_id}: not an eval job; evals run on eval jobs only")
    if job.spec.acceptance == "synthetic" or job.spec.target_al is not None:
        raise EvalError(
            f"{job.job_id}: speculative decoding with synthetic acceptance "
            f"(target AL {job.spec.target_al}); an eval job verifies drafts for real"
        )
    found = synthetic_settings(spec, banned)
    if found:
        raise EvalError(
            f"{job.job_id}: the eval server's command carries synthetic acceptance: "
            f"{', '.join(found)}; evals run with real verification ({banned.source})"
        )
