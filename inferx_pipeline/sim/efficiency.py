"""Efficiency constants per engine x SKU, read from ``catalog/sim-efficiency.yaml``."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from inferx_pipeline.catalog import read_model
from inferx_pipeline.errors import CatalogError
from inferx_pipeline.strict import FrozenModel

EFFICIENCY_FILE = "sim-efficiency.yaml"
ANY = "*"


class Efficiency(FrozenModel):
    """How close one engine gets to a SKU's peaks, plus its fixed per-step costs."""

    engine: str = Field(description="Engine framework, or * for any.")
    sku: str = Field(description="Catalog SKU id, or * for any.")
    mbu: float = Field(gt=0, le=1, description="Achieved fraction of HBM bandwidth.")
    mfu: float = Field(gt=0, le=1, description="Achieved fraction of dense peak FLOP/s.")
    step_overhead_ms: float = Field(ge=0, description="CPU scheduling + sampling per step, ms.")
    allreduce_latency_us: float = Field(ge=0, description="Fixed latency per all-reduce, us.")
    calibrated: bool = Field(description="True only when fitted to measured results.")
    note: str


class EfficiencyTable(FrozenModel):
    """All profiles; ``lookup`` picks the most specific one."""

    source: str
    profiles: tuple[Efficiency, ...]

    def lookup(self, engine: str, sku: str) -> Efficiency:
        """The profile for ``engine`` on ``sku``: (engine, sku) > (engine, *) > (*, sku) > (*, *).

        Raises CatalogError when not even the ``(*, *)`` fallback exists.
        """
        by_key = {(p.engine, p.sku): p for p in self.profiles}
        for key in ((engine, sku), (engine, ANY), (ANY, sku), (ANY, ANY)):
            if key in by_key:
                return by_key[key]
        raise CatalogError(
            f"catalog/{EFFICIENCY_FILE}: no profile for engine {engine!r} on SKU {sku!r}; "
            'add one, or a fallback with engine: "*" and sku: "*"'
        )


def load_efficiency(catalog_dir: Path) -> EfficiencyTable:
    """Read ``sim-efficiency.yaml`` in ``catalog_dir``; CatalogError naming the file if invalid."""
    return read_model(catalog_dir / EFFICIENCY_FILE, EfficiencyTable, "efficiency profiles")
