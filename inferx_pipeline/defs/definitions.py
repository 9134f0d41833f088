"""The code location: ``workspace.yaml`` points here (``defs``, loaded lazily).

``build_definitions`` merges assets, checks, jobs, sensors and resources for one
project; ``defs`` builds them from the ``INFERX_*`` settings when Dagster loads the
location (not at import). The embedded default: the simulator launched as child
processes, SQLite results and the artifact store under ``.inferx/``.

The SKU sweep assets come from the SKU catalog: one per catalog SKU that some valid
recipe runs on, its concurrency partitions taken from those recipes at load time (a
recipe change that adds a SKU or a concurrency needs a reload of the location). A
broken recipe never stops the location from loading: it shows on the ``recipes``
asset's blocking check while the other recipes keep their sweeps.

Runs execute in one process: a sweep run is one step, so a second process per step would
only add its start-up to every click. The executor is the one ``execute_in_process``
puts on a job (an in-process executor with retries on, as ``in_process_executor``):
runs ``inferx materialize`` starts in its own process then record the same job snapshot
as the UI's, so re-executing them from the UI never warns of another job version. The upstream
assets (recipes, curves, matrix) carry an automation condition (``WHEN_MISSING``) that a
sensor running by default evaluates, so a fresh instance materializes them (in one run)
and no sweep starts with a missing-upstream warning. Code references point at the source
files (and at ``INFERX_CODE_URL`` when set). The results assets carry freshness policies
(``catalog/freshness.yaml``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import dagster as dg

# Not exported by dagster; see the module docstring for why the jobs run on it.
from dagster._core.definitions.executor_definition import execute_in_process_executor

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.defs.assets import (
    GOLDEN_CURVES,
    RECIPES,
    SWEEP_MATRIX,
    golden_curves,
    jobs_version,
    recipes,
    results_assets,
    sweep_asset,
    sweep_key,
    sweep_matrix,
)
from inferx_pipeline.defs.freshness import load_freshness, with_freshness
from inferx_pipeline.defs.jobs import publish_job, sweep_job
from inferx_pipeline.defs.pulls import ForgeResource, pr_job, pull_requests
from inferx_pipeline.defs.resources import (
    EvalsResource,
    LauncherResource,
    ProjectResource,
    RecipeRepoResource,
    ResultsResource,
)
from inferx_pipeline.defs.run_sensors import dead_runs_sensor, failure_sensor, publish_sensor
from inferx_pipeline.defs.sensors import curve_sensor, git_sensor, image_sensor
from inferx_pipeline.images.config import load_registry_config
from inferx_pipeline.images.registry import Registries
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.partitions import ladders
from inferx_pipeline.plan.build import MatrixRequest, load_matrix
from inferx_pipeline.settings import Settings

# The repository root: code references are made relative to it for git links.
REPO_ROOT = Path(__file__).resolve().parents[2]
UPSTREAM = (RECIPES, GOLDEN_CURVES, SWEEP_MATRIX)
# Missing, not being made, and not just failed (no retry loop on a broken checkout). Not
# `on_missing()`: that fires only for assets that become missing after it is first
# evaluated, never for the never-materialized assets of a fresh instance.
# The label names the condition in the UI's evaluation of each asset.
WHEN_MISSING = (
    dg.AutomationCondition.missing()
    & ~dg.AutomationCondition.in_progress()
    & ~dg.AutomationCondition.execution_failed()
).with_label("missing, not in progress, its last run did not fail")

# Shown in the UI, whose "Preview tick result" Dagster 1.13 disables for automation
# sensors (their ticks run in the daemon; a dry run raises NotImplementedError).
MISSING_UPSTREAM_DESCRIPTION = (
    "Materializes recipes, golden_curves and sweep_matrix, in one run, when one is missing, "
    "not in progress and its last run did not fail (an asset whose run failed waits for a "
    "materialization by hand: that run's log says why). Evaluated by the Dagster daemon, "
    "so it has no tick preview; each evaluation, with the condition's result per asset, is "
    "in this sensor's tick history and on each asset's Automation tab."
)


def sku_ladders(settings: Settings) -> dict[str, tuple[int, ...]]:
    """Catalog SKUs (catalog order) that valid recipes run on -> their concurrencies."""
    return _catalog_ladders(load_matrix(MatrixRequest(paths=()), settings).jobs, settings)


def _catalog_ladders(
    jobs: Sequence[BenchmarkJob], settings: Settings
) -> dict[str, tuple[int, ...]]:
    found = ladders(jobs)
    catalog = cached_catalog(settings.catalog_dir)
    return {sku: found[sku] for sku in catalog.skus if sku in found}


def default_resources(settings: Settings) -> dict[str, object]:
    """Resources of the embedded default, from ``settings``."""
    return {
        "project": ProjectResource(root=str(settings.root), state_dir=str(settings.state)),
        # By variable name, so a password in the URL never reaches run storage.
        "results": ResultsResource(
            database_url=dg.EnvVar("INFERX_DATABASE_URL") if settings.database_url else None
        ),
        "launcher": LauncherResource(
            kind=settings.launcher,
            pools_file=str(settings.runner_pools) if settings.runner_pools else None,
            host_file=str(settings.local_host) if settings.local_host else None,
            time_scale=settings.sim_time_scale,
        ),
        # Eval jobs scored by lm-eval from the settings' python and HF home, as inferx sweep.
        "evals": EvalsResource(),
        "registries": Registries(load_registry_config(settings.registries)),
        "recipes_repo": RecipeRepoResource(
            source=settings.recipes_repo, branch=settings.recipes_branch
        ),
        # The token by variable name only, and only when set (an unset EnvVar fails to load).
        "forge": ForgeResource(
            repo=settings.forge_repo,
            api_url=settings.forge_api,
            token=dg.EnvVar(settings.forge_token_env)
            if os.environ.get(settings.forge_token_env)
            else None,
        ),
    }


def build_definitions(
    settings: Settings,
    *,
    resources: dict[str, object] | None = None,
    ladder_of: dict[str, tuple[int, ...]] | None = None,
) -> dg.Definitions:
    """Every asset, check, job and sensor of the project at ``settings``.

    ``resources`` replace the defaults by key (tests pass fakes and fast simulators);
    ``ladder_of`` replaces the SKU ladders (default: ``sku_ladders(settings)``). Each sweep
    asset's kinds come from its SKU's vendor, its code version from its jobs' fingerprints.
    """
    matrix_jobs = load_matrix(MatrixRequest(paths=()), settings).jobs
    ladder_of = ladder_of if ladder_of is not None else _catalog_ladders(matrix_jobs, settings)
    skus = list(ladder_of)
    catalog = cached_catalog(settings.catalog_dir)
    sweeps = [
        sweep_asset(
            sku,
            ladder,
            vendor=catalog.skus[sku].vendor,
            code_version=jobs_version(job for job in matrix_jobs if job.sku == sku),
        )
        for sku, ladder in ladder_of.items()
    ]
    jobs = [sweep_job(sku) for sku in skus]
    upstream = [
        asset.with_attributes(automation_condition=WHEN_MISSING)
        for asset in (recipes, golden_curves, sweep_matrix)
    ]
    assets = [*upstream, *sweeps, *results_assets([sweep_key(sku) for sku in skus])]
    return dg.Definitions(
        assets=with_freshness(
            code_references(assets, settings),
            load_freshness(settings.catalog_dir),
            settings.catalog_dir,
        ),
        jobs=[*jobs, publish_job, pr_job],
        sensors=[
            pull_requests,
            image_sensor(ladder_of, jobs),
            curve_sensor(ladder_of, jobs),
            git_sensor(ladder_of, jobs),
            publish_sensor(skus, publish_job),
            failure_sensor(skus, [*jobs, publish_job]),
            dead_runs_sensor(),
            dg.AutomationConditionSensorDefinition(
                "materialize_missing_upstream",
                target=dg.AssetSelection.assets(*UPSTREAM),
                default_status=dg.DefaultSensorStatus.RUNNING,
                minimum_interval_seconds=10,
                description=MISSING_UPSTREAM_DESCRIPTION,
            ),
        ],
        resources={**default_resources(settings), **(resources or {})},
        executor=execute_in_process_executor,
        metadata={
            "project_root": dg.MetadataValue.path(str(settings.root)),
            "skus": dg.MetadataValue.json(skus),
            "launcher": dg.MetadataValue.text(settings.launcher),
        },
    )


def code_references(
    assets: Sequence[dg.AssetsDefinition], settings: Settings
) -> list[dg.AssetsDefinition]:
    """``assets`` with their source locations, linked to ``settings.code_url`` when set."""
    located = dg.with_source_code_references(assets)
    if settings.code_url is not None:
        located = dg.link_code_references_to_git(
            located,
            git_url=settings.code_url,
            git_branch=settings.code_branch,
            file_path_mapping=dg.AnchorBasedFilePathMapping(
                local_file_anchor=REPO_ROOT, file_anchor_path_in_repository=""
            ),
        )
    return [asset for asset in located if isinstance(asset, dg.AssetsDefinition)]


@dg.definitions
def defs() -> dg.Definitions:
    """The project's definitions under the ``INFERX_*`` settings of this process."""
    return build_definitions(Settings())
