"""The asset graph: recipes -> golden_curves -> sweep_matrix -> sweep/<sku> -> results -> site.

Asset bodies orchestrate: they call the library and return ``dg.MaterializeResult``
with what a person wants to see. Nothing is passed through an IO manager: recipes and
curves are files, sweeps record into the artifact store, results live in the results
database, the leaderboard is a directory; each asset reads its inputs from there.

A sweep run over several partitions measures every cell of the run in one
``run_sweep`` call, so each server group starts once for all its concurrencies; each
partition then shows its own cell's numbers (``defs/cells.py``). The run config's eval
mode adds the cells' eval jobs, scored by lm-eval (the ``evals`` resource) after their
throughput points, or alone (evals-only), exactly as ``inferx sweep`` does; the sweep
asset's ``eval_thresholds`` check fails with each real eval job below its threshold and
warns when all of them are simulated (``defs/checks.py``). A run in which any job fails
still records every outcome (nothing measured is lost), then fails, so its partitions
show as failed and a retry measures only what is missing (good points are reused).

A sweep asset's kinds name its SKU's vendor (``cpu`` for a CPU host) and its code
version is its jobs' fingerprints (``jobs_version``): a recipe change that alters a job
changes it, a new run of the same jobs does not. The upstream assets' data versions are
hashes of their content (``defs/versions.py``), so re-materializing unchanged recipes,
curves or matrix leaves every cell fresh.
"""

# No `from __future__ import annotations`: Dagster reads these annotations at run time.
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import dagster as dg

from inferx_pipeline.bench.validity import ValidityRules, load_rules
from inferx_pipeline.catalog import Vendor, cached_catalog
from inferx_pipeline.defs import metadata
from inferx_pipeline.defs.cells import cell_metadata, outcomes_by_cell, point_metadata
from inferx_pipeline.defs.checks import SIMULATED_EVALS, BelowThreshold, threshold_check
from inferx_pipeline.defs.config import PointSize, SweepConfig, missing_reason, run_tags
from inferx_pipeline.defs.partitions import (
    add_images,
    cells_of,
    images_name,
    sweep_partitions,
)
from inferx_pipeline.defs.resources import (
    EvalsResource,
    LauncherResource,
    ProjectResource,
    ResultsResource,
)
from inferx_pipeline.defs.tags import COMMIT_TAG
from inferx_pipeline.defs.versions import tree_version
from inferx_pipeline.errors import EvalError, ImageRefError
from inferx_pipeline.gitrepo import commit_tree
from inferx_pipeline.golden import load_golden
from inferx_pipeline.images.refs import ImageRef
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.partitions import Cell, cell_jobs, pinned_cells
from inferx_pipeline.matrix.select import Selection
from inferx_pipeline.plan.build import MatrixRequest, load_matrix
from inferx_pipeline.recipes.loader import load_recipes
from inferx_pipeline.recipes.policy.data import cached_policy
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.artifacts import ArtifactStore
from inferx_pipeline.sweep.groups import ServerGroup
from inferx_pipeline.sweep.report import JobOutcome, SweepOptions, SweepReport
from inferx_pipeline.sweep.reuse import policy_version
from inferx_pipeline.sweep.runner import VALIDITY_FILE, run_sweep
from inferx_pipeline.sweep.sanity import check_points
from inferx_pipeline.sweep.status import SweepPolicy, load_policy

if TYPE_CHECKING:  # see LAZY
    from inferx_pipeline.results.store import ResultStore

POLICY_CHECK = "policy_rules"
SANITY_CHECK = "result_sanity"
COMPLETENESS_CHECK = "completeness"
EVAL_CHECK = "eval_thresholds"
RECIPES = dg.AssetKey("recipes")
GOLDEN_CURVES = dg.AssetKey("golden_curves")
SWEEP_MATRIX = dg.AssetKey("sweep_matrix")
NORMALIZED_RESULTS = dg.AssetKey("normalized_results")
LEADERBOARD = dg.AssetKey("leaderboard")
OWNERS = ["team:inference-benchmarks"]
# A sweep asset's kinds by its SKU's vendor (catalog/skus.yaml); "none" is a CPU host.
KINDS: Mapping[Vendor, frozenset[str]] = {
    "nvidia": frozenset({"python", "nvidia", "gpu"}),
    "amd": frozenset({"python", "amd", "gpu"}),
    "none": frozenset({"python", "cpu"}),
}
# LAZY: the results assets import the results store and the site builder (SQLAlchemy,
# alembic, pandas, plotly) in their bodies. Every run's worker loads this module, and a
# sweep run needs none of them: importing them cost ~2 s of each click-to-start.


def sweep_key(sku: str) -> dg.AssetKey:
    """The sweep asset of ``sku``: ``sweep/<sku>``."""
    return dg.AssetKey(["sweep", sku])


def jobs_version(jobs: Iterable[BenchmarkJob]) -> str:
    """A short hash of the distinct fingerprints of ``jobs``: a sweep asset's code version.

    Changes when a recipe change alters what any of the jobs measures (engine, flags,
    scenario, ...), not with the run that measured them nor with the concurrency ladder.
    """
    fingerprints = sorted({job.fingerprint for job in jobs})
    return hashlib.sha256("\n".join(fingerprints).encode()).hexdigest()[:16]


def pool_name(sku: str) -> str:
    """The Dagster pool bounding concurrent runs on ``sku``'s GPUs."""
    return f"gpu-{sku}"


@dg.asset(
    key=RECIPES,
    group_name="recipes",
    owners=OWNERS,
    kinds={"python", "yaml"},
    check_specs=[
        dg.AssetCheckSpec(
            POLICY_CHECK,
            asset=RECIPES,
            blocking=True,
            description="Every recipe parses and (unless INFERX_RECIPE_CHECKS=parity) passes "
            "the pre-GPU policy rules.",
        )
    ],
)
def recipes(project: ProjectResource) -> dg.MaterializeResult:
    """Every recipe under recipes/, validated: count, errors (file:line, rule) and warnings."""
    settings = project.settings()
    catalog = cached_catalog(settings.catalog_dir)
    loaded = load_recipes(
        (settings.recipes_dir,),
        catalog=catalog,
        golden=load_golden(settings.golden_dir),
        policy=cached_policy(settings.catalog_dir),
        # Under parity the rules do not gate (as in `load_matrix`): the check is parsing.
        run_policy=settings.recipe_checks == "enforce",
    )
    check = dg.AssetCheckResult(
        check_name=POLICY_CHECK,
        passed=loaded.ok,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata=metadata.policy_metadata(loaded),
    )
    return dg.MaterializeResult(
        metadata=metadata.recipe_metadata(loaded),
        check_results=[check],
        data_version=dg.DataVersion(tree_version(settings.recipes_dir)),
    )


@dg.asset(key=GOLDEN_CURVES, deps=[RECIPES], group_name="recipes", owners=OWNERS, kinds={"yaml"})
def golden_curves(project: ProjectResource) -> dg.MaterializeResult:
    """The golden acceptance-length curves, with provenance and content hashes."""
    golden_dir = project.settings().golden_dir
    return dg.MaterializeResult(
        metadata=metadata.curve_metadata(load_golden(golden_dir)),
        data_version=dg.DataVersion(tree_version(golden_dir)),
    )


@dg.asset(
    key=SWEEP_MATRIX, deps=[GOLDEN_CURVES], group_name="recipes", owners=OWNERS, kinds={"python"}
)
def sweep_matrix(
    context: dg.AssetExecutionContext, project: ProjectResource
) -> dg.MaterializeResult:
    """The job matrix of every valid recipe; registers each SKU's pinned images as partitions."""
    matrix = load_matrix(MatrixRequest(paths=()), project.settings())
    cells = pinned_cells(matrix.jobs)
    add_images(context.instance, sorted(cells, key=str))
    images = sorted({cell.image for cell in cells})
    return dg.MaterializeResult(
        metadata=metadata.matrix_metadata(matrix.jobs, images),
        data_version=dg.DataVersion(jobs_version(matrix.jobs)),
    )


class LogProgress:
    """Sweep progress as lines in the run's log."""

    def __init__(self, log: dg.DagsterLogManager) -> None:
        self.log = log

    def group_started(self, group: ServerGroup, index: int, total: int) -> None:
        concs = ", ".join(str(c) for c in group.concurrencies)
        self.log.info(f"server group {index + 1}/{total}: {group.name} at concurrency {concs}")

    def point_started(self, job: BenchmarkJob) -> None:
        self.log.info(f"measuring {job.job_id}")

    def point_finished(self, outcome: JobOutcome) -> None:
        detail = f": {outcome.message}" if outcome.message else ""
        self.log.info(f"{outcome.job_id} {outcome.status}{detail}")

    def group_finished(self, group: ServerGroup) -> None:
        return None


def _settings_for_run(context: dg.AssetExecutionContext, project: ProjectResource) -> Settings:
    """The project, or its recipes as of the commit a merged-recipe run was requested for."""
    settings = project.settings()
    commit = context.run.tags.get(COMMIT_TAG)
    if commit is None:
        return settings
    tree = commit_tree(settings.state, commit)
    if not tree.is_dir():
        context.log.warning(f"no exported tree of commit {commit} at {tree}; using {settings.root}")
        return settings
    context.log.info(f"recipes as of commit {commit} ({tree})")
    return Settings(root=tree, state_dir=settings.state)


def _record_how(
    context: dg.AssetExecutionContext,
    sku: str,
    project: ProjectResource,
    point: PointSize,
) -> None:
    """Tag the run with how it measures, whatever launched it (UI, sensor, CLI)."""
    tags = run_tags(sku=sku, root=project.root, point=point)
    context.instance.add_run_tags(context.run.run_id, {**tags, **missing_reason(context.run.tags)})


def _point_size(
    settings: Settings, options: SweepOptions, launcher: LauncherResource, policy: SweepPolicy
) -> tuple[PointSize, ValidityRules]:
    """How big this run's points are, with the validity rules that judge them."""
    rules = load_rules(settings.catalog_dir / VALIDITY_FILE)
    version = policy_version(policy, rules)
    point = PointSize(
        options=options,
        launcher=launcher.kind,
        policy_version=version,
        min_duration_s=rules.min_duration_s,
    )
    return point, rules


def _measure(
    context: dg.AssetExecutionContext,
    config: SweepConfig,
    sku: str,
    project: ProjectResource,
    launcher: LauncherResource,
    evals: EvalsResource,
) -> dg.MaterializeResult:
    settings = _settings_for_run(context, project)
    policy = load_policy(settings.catalog_dir)
    point, rules = _point_size(settings, config.options(), launcher, policy)
    _record_how(context, sku, project, point)
    keyed = cells_of(context.instance, sku, context.partition_keys)
    cells = list(keyed.values())
    _check_images(sku, cells)
    request = MatrixRequest(paths=(), selection=Selection(skus=(sku,)), evals=config.evals)
    jobs = cell_jobs(load_matrix(request, settings).jobs, cells)
    artifacts = project.artifacts()
    scoring = None
    if any(job.run_eval for job in jobs):
        try:
            scoring = evals.setup(settings)
        except EvalError as err:  # the throughput jobs still run; each eval job fails
            context.log.error(f"evals cannot run, so every eval job fails: {err}")
    report = run_sweep(
        jobs,
        backend=launcher.source(settings, run_id=context.run.run_id, skus=[sku]),
        artifacts=artifacts,
        policy=policy,
        options=point.options,
        progress=LogProgress(context.log),
        run_id=context.run.run_id,
        validity=rules,
        evals=scoring,
    )
    shown = metadata.sweep_metadata(report, jobs, cells, artifacts)
    failed = [o for o in report.outcomes if not o.good]
    if failed:
        first = failed[0]
        raise dg.Failure(
            description=(
                f"{len(failed)} of {len(jobs)} jobs did not produce a good result "
                f"({report.counts()}); first: {first.job_id} {first.status}: {first.message}. "
                "Every outcome is recorded; a retry reuses the good points."
            ),
            metadata=shown,
        )
    _show_cells(context, keyed, jobs, report, artifacts, point)
    problems = check_points(report, jobs, policy)
    check = dg.AssetCheckResult(
        check_name=SANITY_CHECK,
        passed=not problems,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={
            "problems": dg.MetadataValue.md(
                metadata.markdown_table(
                    ("job", "problem"), ((p.job_id, p.problem) for p in problems)
                )
            ),
            "checked_jobs": dg.MetadataValue.int(len(jobs)),
            **metadata.run_metadata(report),
        },
    )
    return dg.MaterializeResult(check_results=[check, _eval_scores(report)])


def _eval_scores(report: SweepReport) -> dg.AssetCheckResult:
    """Each eval job of the run below its threshold: fails, or warns when all are simulated."""
    scored = [(o.job_id, o.eval) for o in report.outcomes if o.eval is not None]
    below = [
        BelowThreshold(
            job=job,
            task=e.task,
            score=e.exact_match,
            threshold=e.threshold,
            simulated=bool(e.metadata.get("simulated")),
        )
        for job, e in scored
        if not e.passed
    ]
    return threshold_check(EVAL_CHECK, below, {"scored_jobs": len(scored)})


def _check_images(sku: str, cells: Sequence[Cell]) -> None:
    """Fail the run, measuring nothing, when a partition key is not an image reference.

    Keys typed into the UI's "Add a partition" are not checked when added; this says
    which key is wrong and how to remove it before any server starts.
    """
    for image in sorted({cell.image for cell in cells}):
        try:
            ImageRef.parse(image)
        except ImageRefError as err:
            raise dg.Failure(
                description=(
                    f"image partition {image!r} of {images_name(sku)}: {err}; expected an "
                    "image reference such as vllm/vllm-openai:v0.11.0. Delete the partition "
                    "(asset page, Partitions tab) and add the reference."
                )
            ) from err


def _show_cells(
    context: dg.AssetExecutionContext,
    keyed: Mapping[dg.MultiPartitionKey, Cell],
    jobs: Sequence[BenchmarkJob],
    report: SweepReport,
    artifacts: ArtifactStore,
    point: PointSize,
) -> None:
    """Give each partition of the run (by the run's own keys) its own cell's metadata."""
    key_of = {cell: key for key, cell in keyed.items()}
    for cell, outcomes in outcomes_by_cell(list(key_of), jobs, report.outcomes).items():
        shown = cell_metadata(cell, outcomes, artifacts, context.instance.has_run)
        shown |= point_metadata(point, cell.conc)
        context.add_asset_metadata(shown, partition_key=key_of[cell])


def sweep_asset(
    sku: str, ladder: Sequence[int], *, vendor: Vendor, code_version: str
) -> dg.AssetsDefinition:
    """The sweep asset of one SKU, partitioned by concurrency (``ladder``) x image.

    Its kinds name the SKU's ``vendor`` (``KINDS``); ``code_version`` is ``jobs_version``
    of the SKU's jobs, so each materialization records the recipes it measured, not the
    run id (Dagster's stand-in for an asset without one).
    """
    key = sweep_key(sku)

    @dg.asset(
        key=key,
        deps=[SWEEP_MATRIX],
        partitions_def=sweep_partitions(sku, ladder),
        backfill_policy=dg.BackfillPolicy.single_run(),
        pool=pool_name(sku),
        group_name="sweeps",
        owners=OWNERS,
        kinds=set(KINDS[vendor]),
        code_version=code_version,
        tags={"inferx/sku": sku},
        description=(
            f"Benchmark points on {sku}: partition (conc, image) measures the {sku} jobs at "
            "that concurrency whose recipe pins or tracks that image."
        ),
        check_specs=[
            dg.AssetCheckSpec(
                SANITY_CHECK,
                asset=key,
                description="Success rate and realized acceptance length within policy.",
            ),
            dg.AssetCheckSpec(
                EVAL_CHECK,
                asset=key,
                description="Every eval job of the run reaches its threshold (none: passes). "
                + SIMULATED_EVALS,
            ),
        ],
    )
    def sweep(
        context: dg.AssetExecutionContext,
        config: SweepConfig,
        project: ProjectResource,
        launcher: LauncherResource,
        evals: EvalsResource,
    ) -> dg.MaterializeResult:
        return _measure(context, config, sku, project, launcher, evals)

    return sweep


def _eval_check(store: "ResultStore") -> dg.AssetCheckResult:
    """Each configuration whose newest eval is below its threshold: fails, or warns when
    all of them are simulated."""
    from inferx_pipeline.results.evals import read_evals  # see LAZY
    from inferx_pipeline.results.gate import below_threshold

    evals = read_evals(store)
    rows = below_threshold(evals).to_dict("records")
    below = [
        BelowThreshold(
            job=str(row["job_id"]),
            task=str(row["task"]),
            score=float(row["exact_match"]),
            threshold=float(row["threshold"]),
            simulated=bool(row["simulated"]),
        )
        for row in rows
    ]
    return threshold_check(EVAL_CHECK, below, {"scored_configurations": len(evals)})


def results_assets(sweep_keys: Sequence[dg.AssetKey]) -> list[dg.AssetsDefinition]:
    """``normalized_results`` (after every sweep asset) and ``leaderboard``."""

    @dg.asset(
        key=NORMALIZED_RESULTS,
        deps=list(sweep_keys),
        group_name="results",
        owners=OWNERS,
        kinds={"sqlite", "postgres"},
        check_specs=[
            dg.AssetCheckSpec(
                EVAL_CHECK,
                asset=NORMALIZED_RESULTS,
                description="Every configuration's newest eval score reaches its threshold. "
                + SIMULATED_EVALS,
            )
        ],
    )
    def normalized_results(
        project: ProjectResource, results: ResultsResource
    ) -> dg.MaterializeResult:
        """Every recorded attempt ingested into the results database (idempotent), eval
        scores too; each ingest's counts and quarantined files in the metadata."""
        from inferx_pipeline.pipeline import ingest_artifacts, ingest_evals  # see LAZY
        from inferx_pipeline.results.store import ResultStore

        settings = project.settings()
        url = results.url(project)
        report = ingest_artifacts(project.artifacts(), url, settings.catalog_dir)
        evals = ingest_evals(project.artifacts(), url)
        store = ResultStore(url)
        try:
            total = store.count()
            check = _eval_check(store)
        finally:
            store.close()
        return dg.MaterializeResult(
            metadata=metadata.ingest_metadata(report, evals, total), check_results=[check]
        )

    @dg.asset(
        key=LEADERBOARD,
        deps=[NORMALIZED_RESULTS],
        group_name="results",
        owners=OWNERS,
        kinds={"html"},
        check_specs=[
            dg.AssetCheckSpec(
                COMPLETENESS_CHECK,
                asset=LEADERBOARD,
                description="Every page and download exists; every recipe with results has a page.",
            )
        ],
    )
    def leaderboard(project: ProjectResource, results: ResultsResource) -> dg.MaterializeResult:
        """The static leaderboard site, rebuilt from the results database."""
        from inferx_pipeline.leaderboard.build import build_site_from_store  # see LAZY
        from inferx_pipeline.leaderboard.completeness import site_gaps

        settings = project.settings()
        url = results.url(project)
        site = build_site_from_store(url, settings.site_dir, settings.catalog_dir)
        missing = site_gaps(site, url)
        check = dg.AssetCheckResult(
            check_name=COMPLETENESS_CHECK,
            passed=not missing,
            metadata={"missing": dg.MetadataValue.json(missing)},
        )
        return dg.MaterializeResult(metadata=metadata.site_metadata(site), check_results=[check])

    return [normalized_results, leaderboard]
