"""Jobs: one per SKU sweep asset (what sensors and retries target) and the publish job."""

from __future__ import annotations

import re

import dagster as dg

from inferx_pipeline.defs.assets import LEADERBOARD, NORMALIZED_RESULTS, sweep_key

PUBLISH_JOB = "publish"


def sweep_job_name(sku: str) -> str:
    """``sweep_<sku>`` with anything but letters, digits and ``_`` made ``_`` (Dagster names)."""
    return "sweep_" + re.sub(r"[^A-Za-z0-9_]", "_", sku)


def sweep_job(sku: str) -> dg.UnresolvedAssetJobDefinition:
    """Materializes partitions of ``sku``'s sweep asset."""
    return dg.define_asset_job(
        sweep_job_name(sku),
        selection=dg.AssetSelection.assets(sweep_key(sku)),
        description=f"Measure partitions (concurrency x image) of the {sku} sweep.",
        tags={"inferx/sku": sku},
    )


publish_job = dg.define_asset_job(
    PUBLISH_JOB,
    selection=dg.AssetSelection.assets(NORMALIZED_RESULTS, LEADERBOARD),
    description="Ingest every recorded result into the results database and rebuild the site.",
)
