"""How long the client waits for one response: data in ``catalog/bench-timeouts.yaml``.

A request fails (counted, with the reason) after ``idle_s`` seconds without a byte or
``total_s`` seconds in all; a run's config may override either.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from inferx_pipeline.bench.wire import Timeouts
from inferx_pipeline.catalog import read_model
from inferx_pipeline.strict import FrozenModel

TIMEOUTS_FILE = "bench-timeouts.yaml"


class ClientTimeouts(FrozenModel):
    """The default per-request limits, with where they come from."""

    idle_s: float = Field(gt=0, description="No byte for this long fails the request, s.")
    total_s: float = Field(gt=0, description="A response longer than this fails, s.")
    source: str
    rationale: dict[str, str] = Field(default_factory=dict)


def load_timeouts(catalog_dir: Path) -> ClientTimeouts:
    """``catalog_dir/bench-timeouts.yaml``; CatalogError naming the file when malformed."""
    return read_model(catalog_dir / TIMEOUTS_FILE, ClientTimeouts, "client timeouts")


def resolve(idle_s: float | None, total_s: float | None, defaults: ClientTimeouts) -> Timeouts:
    """The limits of one run: each given value, else the data's default (pure)."""
    return Timeouts(
        idle_s=defaults.idle_s if idle_s is None else idle_s,
        total_s=defaults.total_s if total_s is None else total_s,
    )
