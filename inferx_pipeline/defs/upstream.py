"""Upstream first: what ``inferx materialize`` and ``inferx backfill`` run before the sweeps.

A sweep cell records the data version of ``sweep_matrix`` it was measured against. Were
the matrix missing, the cell would record none, and the automation sensor's first
materialization of the upstream assets (when the UI opens) would then mark every cell
"Unsynced". So the commands bring ``recipes`` -> ``golden_curves`` -> ``sweep_matrix``
up to date first, in one run of the same asset job the UI uses: the first of them whose
recorded data version is not its content's (``defs/versions.py``), or that was made from
another version of the asset before it, and every one after it. With nothing changed,
nothing runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import dagster as dg
from pydantic import Field

from inferx_pipeline.defs.assets import GOLDEN_CURVES, RECIPES, SWEEP_MATRIX, jobs_version
from inferx_pipeline.defs.execute import CONSOLE_INFO, interrupt_error
from inferx_pipeline.defs.liveness import owned_run
from inferx_pipeline.defs.tags import REASON_TAG
from inferx_pipeline.defs.versions import DATA_VERSION_TAG, tree_version
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.plan.build import MatrixRequest, load_matrix
from inferx_pipeline.settings import Settings
from inferx_pipeline.strict import FrozenModel

# In dependency order: each depends on the one before it.
UPSTREAM = (RECIPES, GOLDEN_CURVES, SWEEP_MATRIX)
# Where Dagster records the data version an asset was made from (per input asset).
INPUT_VERSION_TAG = "dagster/input_data_version/{}"


class UpstreamRun(FrozenModel):
    """The run that brought the upstream assets up to date, and how it ended."""

    run_id: str
    success: bool
    interrupted: bool = Field(description="Stopped by SIGINT or SIGTERM while it ran.")


def content_versions(settings: Settings, jobs: Sequence[BenchmarkJob]) -> dict[dg.AssetKey, str]:
    """Each upstream asset's data version as of now: its content's hash.

    ``jobs`` is the matrix of every valid recipe (``load_matrix`` of ``settings``).
    """
    return {
        RECIPES: tree_version(settings.recipes_dir),
        GOLDEN_CURVES: tree_version(settings.golden_dir),
        SWEEP_MATRIX: jobs_version(jobs),
    }


def _recorded(instance: dg.DagsterInstance, key: dg.AssetKey) -> Mapping[str, str]:
    """The tags of ``key``'s latest materialization (empty when it has none)."""
    entry = instance.get_latest_materialization_event(key)
    materialization = entry.asset_materialization if entry is not None else None
    return materialization.tags or {} if materialization is not None else {}


def outdated_upstream(
    instance: dg.DagsterInstance, versions: Mapping[dg.AssetKey, str]
) -> list[dg.AssetKey]:
    """The upstream assets to materialize so that each is its content's version and made
    from the version of the asset before it (empty when all are)."""
    before: dg.AssetKey | None = None
    for index, key in enumerate(UPSTREAM):
        tags = _recorded(instance, key)
        made_from = before is None or (
            tags.get(INPUT_VERSION_TAG.format(before.to_user_string())) == versions[before]
        )
        if tags.get(DATA_VERSION_TAG) != versions[key] or not made_from:
            return list(UPSTREAM[index:])
        before = key
    return []


def materialize_upstream(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    settings: Settings,
) -> UpstreamRun | None:
    """Materialize the ``outdated_upstream`` assets of ``settings`` here, in one run of the
    asset job the UI uses (reason ``upstream-outdated``); None when none is outdated.

    Idempotent: unchanged content runs nothing. A failed run does not raise (a broken
    recipe fails the ``recipes`` check, which blocks the assets after it), nor does a
    signal, which Dagster's step takes over: the caller reads ``success`` and
    ``interrupted``.
    """
    jobs = load_matrix(MatrixRequest(paths=()), settings).jobs
    keys = outdated_upstream(instance, content_versions(settings, jobs))
    if not keys:
        return None
    run_id, owner = owned_run()
    result = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        run_config=CONSOLE_INFO,
        instance=instance,
        run_id=run_id,
        asset_selection=keys,
        tags={REASON_TAG: "upstream-outdated", **owner},
        raise_on_error=False,
    )
    return UpstreamRun(
        run_id=run_id,
        success=result.success,
        interrupted=any(interrupt_error(event) for event in result.all_events),
    )
