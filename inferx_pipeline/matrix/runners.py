"""InferenceX runner labels: which SKU each label means and its per-node facts.

Data: ``catalog/inferencex-runners.yaml`` (copied from InferenceX ``configs/runners.yaml``).
Used by the import (label -> SKU) and by expansion (agentic DRAM budget).
"""

from __future__ import annotations

import functools
from decimal import Decimal
from pathlib import Path

from pydantic import Field

from inferx_pipeline.catalog import read_model
from inferx_pipeline.errors import MatrixError
from inferx_pipeline.strict import FrozenModel

RUNNERS_FILE = "inferencex-runners.yaml"
_BYTES_PER_MIB = 1024 * 1024
_BYTES_PER_GB = 1_000_000_000


class Runner(FrozenModel):
    """One runner label."""

    sku: str = Field(description="catalog/skus.yaml key of the label's GPUs.")
    nodes: int = Field(ge=0, description="Runner nodes carrying the label.")
    gpus_per_node: int | None = Field(default=None, gt=0)
    available_cpu_dram_mib: int | None = Field(
        default=None, gt=0, description="CPU DRAM a benchmark may use per node, MiB."
    )


class RunnerCatalog(FrozenModel):
    """Every known runner label, and InferenceX's agentic DRAM cap."""

    source: str
    agentic_dram_cap_mib: int = Field(gt=0, description="Cap on available DRAM, MiB.")
    runners: dict[str, Runner]

    def runner(self, label: str) -> Runner | None:
        """The runner for ``label``, or None when InferenceX does not list it."""
        return self.runners.get(label)

    def dram_budget_gb(self, label: str, *, utilization: float, gpus: int) -> int:
        """InferenceX's agentic DRAM budget for a server (replica) of ``gpus`` GPUs, GB.

        ``int(min(available, cap) MiB * utilization * share / 1e9)`` in exact decimal
        arithmetic, where ``share = min(gpus, gpus_per_node) / gpus_per_node`` (1 for a server
        spanning several nodes). MatrixError when the label has
        no node facts.
        """
        runner = self.runners.get(label)
        if runner is None or runner.available_cpu_dram_mib is None or not runner.gpus_per_node:
            known = ", ".join(k for k, r in self.runners.items() if r.available_cpu_dram_mib)
            raise MatrixError(
                f"runner {label!r}: no available-cpu-dram-mib/gpus-per-node in "
                f"catalog/{RUNNERS_FILE} for a kv-offloading: dram arm; labels with node "
                f"facts: {known}"
            )
        available = min(runner.available_cpu_dram_mib, self.agentic_dram_cap_mib)
        # A server spanning whole nodes uses all of each node's DRAM (share 1), as InferenceX.
        share = Decimal(min(gpus, runner.gpus_per_node)) / runner.gpus_per_node
        budget = Decimal(available) * _BYTES_PER_MIB * Decimal(str(utilization)) * share
        return int(budget / _BYTES_PER_GB)

    def sku_for(self, label: str) -> str:
        """The SKU of ``label``; unknown labels fall back to their GPU-family prefix."""
        runner = self.runners.get(label)
        if runner is not None:
            return runner.sku
        return label.removeprefix("cluster:").split("-", 1)[0]


def load_runners(catalog_dir: Path) -> RunnerCatalog:
    """Read ``catalog_dir/inferencex-runners.yaml``; CatalogError naming the file if invalid."""
    return read_model(catalog_dir / RUNNERS_FILE, RunnerCatalog, "runner labels")


@functools.cache
def cached_runners(catalog_dir: Path) -> RunnerCatalog:
    """``load_runners`` memoized per directory."""
    return load_runners(catalog_dir)
