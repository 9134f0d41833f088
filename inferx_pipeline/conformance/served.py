"""Every job's final server command, for the rules that judge what will run.

``served_commands(loaded, ...)`` expands one recipe, adds the eval twin of every job
(any job may be picked for an eval by some mode; none for a recipe with ``eval.mode:
never``), and builds each job's ``ServerSpec`` through its engine adapter, exactly as a
launcher would receive it. Multinode jobs have no single-node server yet and are left
out; an adapter that refuses a job (LaunchError), or an eval twin the model cannot serve
(MatrixError: its context), is a finding, since the launcher would refuse it too.

``served_findings(parsed, ...)`` runs the final-command rules (``policy.check_served``)
on every recipe and returns their findings; ``judge_served(result, ...)`` adds them to a
``LoadResult`` (a field a recipe rule already flagged under the same rule is not
reported twice) and leaves recipes with an error out of ``result.recipes``.
"""

from __future__ import annotations

from collections.abc import Iterable

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.engines.base import adapter_for
from inferx_pipeline.errors import InferxError, LaunchError, MatrixError
from inferx_pipeline.golden import GoldenRegistry
from inferx_pipeline.matrix.eval_catalog import EvalCatalog
from inferx_pipeline.matrix.evals import eval_job
from inferx_pipeline.matrix.expand import expand
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.runners import RunnerCatalog
from inferx_pipeline.recipes import policy
from inferx_pipeline.recipes.findings import Finding
from inferx_pipeline.recipes.loader import LoadedRecipe, LoadResult
from inferx_pipeline.recipes.policy.base import rows
from inferx_pipeline.recipes.policy.data import PolicyData
from inferx_pipeline.recipes.policy.served import Served
from inferx_pipeline.recipes.yamlsource import FieldPath


def _row_paths(loaded: LoadedRecipe) -> list[FieldPath]:
    # expand() walks blocks, rows and concurrencies in document order, one job each.
    return [ref.path for ref in rows(loaded.recipe) for _ in ref.row.concurrencies()]


def _served(job: BenchmarkJob, catalog: Catalog, row: FieldPath) -> Served:
    spec = adapter_for(job).server_spec(job, sku=catalog.skus[job.sku])
    return Served(
        job_id=job.job_id,
        framework=job.engine.framework,
        scenario=job.scenario,
        is_eval=job.run_eval,
        target_al=job.spec.target_al,
        image=spec.image,
        argv=spec.argv,
        env=dict(spec.env),
        max_model_len=job.max_model_len,
        row=row,
        speculative=job.spec.method != "none",
        draft_tokens=job.spec.draft_tokens,
    )


def served_commands(
    loaded: LoadedRecipe,
    *,
    golden: GoldenRegistry,
    catalog: Catalog,
    runners: RunnerCatalog,
    evals: EvalCatalog,
) -> tuple[list[Served], list[str]]:
    """(final commands of every single-node job and its eval twin, refusals).

    ``evals`` gives each eval twin its context. Raises InferxError when the recipe does
    not expand (reported by rule ``matrix``).
    """
    jobs = expand([loaded], golden=golden, catalog=catalog, runners=runners, duplicates="keep")
    evaluated = loaded.recipe.eval.mode != "never"
    out: list[Served] = []
    refused: list[str] = []
    for job, row in zip(jobs, _row_paths(loaded), strict=False):
        if job.parallel is None or job.sku not in catalog.skus:
            continue
        try:
            out.append(_served(job, catalog, row))
            if evaluated:
                out.append(_served(eval_job(job, evals=evals, catalog=catalog), catalog, row))
        except (LaunchError, MatrixError) as err:
            refused.append(str(err))
    # Adapters name the job first ("<job id>: why"): one refusal per reason, not per job.
    by_reason = {message.partition(": ")[2] or message: message for message in refused}
    return out, list(by_reason.values())


def served_findings(
    parsed: Iterable[LoadedRecipe],
    *,
    golden: GoldenRegistry,
    catalog: Catalog,
    data: PolicyData,
    runners: RunnerCatalog,
    evals: EvalCatalog,
) -> list[Finding]:
    """Findings of the final-command rules on every recipe of ``parsed``."""
    found: list[Finding] = []
    for loaded in parsed:
        try:
            served, refused = served_commands(
                loaded, golden=golden, catalog=catalog, runners=runners, evals=evals
            )
        except InferxError:
            continue  # rule ``matrix`` reports recipes that do not expand
        found += policy.check_served(
            loaded.recipe, served, catalog=catalog, golden=golden, data=data, where=loaded
        )
        found += [_refusal(loaded, message) for message in refused]
    return found


def judge_served(
    result: LoadResult,
    *,
    golden: GoldenRegistry,
    catalog: Catalog,
    data: PolicyData,
    runners: RunnerCatalog,
    evals: EvalCatalog,
) -> None:
    """Add the final-command findings of ``result.parsed`` to ``result`` (in place)."""
    found = served_findings(
        result.parsed, golden=golden, catalog=catalog, data=data, runners=runners, evals=evals
    )
    seen = {(f.recipe, f.field, f.rule) for f in result.errors}
    errors = [f for f in found if f.is_error and (f.recipe, f.field, f.rule) not in seen]
    result.errors.extend(errors)
    result.warnings.extend(f for f in found if not f.is_error)
    failed = {f.recipe for f in errors}
    result.recipes = [loaded for loaded in result.recipes if loaded.source not in failed]


def _refusal(loaded: LoadedRecipe, message: str) -> Finding:
    location = loaded.locate(("engine",))
    return Finding(
        severity="error",
        rule="matrix",
        message=f"got a job that cannot be served: {message}",
        location=location,
        field="engine",
        chain=loaded.chain_to(location),
        recipe=loaded.source,
    )
