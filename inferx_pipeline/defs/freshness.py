"""Freshness policies: how stale each results asset may get (data: ``catalog/freshness.yaml``).

Time-window policies (``dg.FreshnessPolicy.time_window``): Dagster's freshness daemon
marks an asset WARN, then FAIL, when its last materialization is older than the
window, so a stalled sensor or publish run shows on the asset graph.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path

import dagster as dg
from pydantic import Field, model_validator

from inferx_pipeline.catalog import read_model
from inferx_pipeline.errors import CatalogError
from inferx_pipeline.strict import FrozenModel

FRESHNESS_FILE = "freshness.yaml"


class Window(FrozenModel):
    """Hours since the last materialization before WARN and before FAIL."""

    warn_hours: float = Field(gt=0, description="Past this, the asset is WARN.")
    fail_hours: float = Field(gt=0, description="Past this, the asset is FAIL.")

    @model_validator(mode="after")
    def _warn_first(self) -> Window:
        if self.warn_hours >= self.fail_hours:
            raise ValueError(
                f"warn_hours {self.warn_hours} must be below fail_hours {self.fail_hours}"
            )
        return self

    def policy(self) -> dg.FreshnessPolicy:
        """The time-window freshness policy of this window."""
        return dg.FreshnessPolicy.time_window(
            fail_window=timedelta(hours=self.fail_hours),
            warn_window=timedelta(hours=self.warn_hours),
        )


class FreshnessWindows(FrozenModel):
    """Asset key (as the UI writes it) -> its window."""

    windows: dict[str, Window]
    source: str
    rationale: dict[str, str] = Field(default_factory=dict)


def load_freshness(catalog_dir: Path) -> FreshnessWindows:
    """``catalog_dir/freshness.yaml``; CatalogError naming the file when unreadable."""
    return read_model(catalog_dir / FRESHNESS_FILE, FreshnessWindows, "freshness windows")


def with_freshness(
    assets: Iterable[dg.AssetsDefinition], windows: FreshnessWindows, catalog_dir: Path
) -> list[dg.AssetsDefinition]:
    """``assets`` with the policy of each window on its asset.

    Raises CatalogError naming a window whose asset does not exist.
    """
    asset_list = list(assets)
    known = {key.to_user_string() for asset in asset_list for key in asset.keys}
    unknown = sorted(set(windows.windows) - known)
    if unknown:
        raise CatalogError(
            f"{catalog_dir / FRESHNESS_FILE}: windows.{unknown[0]}: no such asset; expected "
            f"one of {', '.join(sorted(known))}"
        )

    def apply(spec: dg.AssetSpec) -> dg.AssetSpec:
        window = windows.windows.get(spec.key.to_user_string())
        return spec if window is None else dg.apply_freshness_policy(spec, window.policy())

    return [
        mapped
        for mapped in dg.map_asset_specs(apply, asset_list)
        if isinstance(mapped, dg.AssetsDefinition)
    ]
