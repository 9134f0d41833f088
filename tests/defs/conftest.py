"""A small project for the Dagster tests: two seed recipes, fast simulated points.

``project`` is a root with the checkout's catalog (validity rules relaxed for
millisecond points, as in tests/test_end_to_end.py), a copy of the golden curves (the
curve sensor test edits one), and the recipes it names; ``INFERX_ROOT`` points at it
for the library code and the simulator children that read it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from inferx_pipeline.defs.definitions import build_definitions
from inferx_pipeline.defs.resources import LauncherResource
from inferx_pipeline.matrix.partitions import Cell, ladders, pinned_cells
from inferx_pipeline.matrix.select import Selection
from inferx_pipeline.plan.build import MatrixRequest, build_matrix
from inferx_pipeline.settings import Settings
from tests.smoke import smoke_root

H200 = "qwen3.8-27b/qwen3.827b-fp8-h200-vllm-mtp.yaml"
BF16 = "qwen3.8-27b/qwen3.827b-bf16-mi325x-vllm-mtp.yaml"
# Milliseconds per simulated step: fast, yet several reads per stream on a loaded box.
FAST = LauncherResource(time_scale=0.02, load_time_s=0)
# One-request points (sweep asset config): what a run passes to measure quickly.
SMALL: dict[str, object] = {"num_prompts": 1, "max_turns": 1, "think_time_scale": 0.0}


@dataclass(frozen=True)
class Project:
    """A project root, its settings and its definitions (fast simulated launcher)."""

    root: Path
    settings: Settings

    def definitions(self, **resources: object) -> dg.Definitions:
        return build_definitions(self.settings, resources={"launcher": FAST, **resources})

    def cells(self, recipe_id: str) -> tuple[list[Cell], dict[str, tuple[int, ...]]]:
        """The pinned cells of one recipe (ascending concurrency) and the SKU ladders."""
        request = MatrixRequest(paths=(), selection=Selection(recipes=(recipe_id,)))
        jobs = build_matrix(request, self.settings)
        everything = build_matrix(MatrixRequest(paths=()), self.settings)
        return sorted(pinned_cells(jobs), key=lambda cell: cell.conc), ladders(everything)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Project]:
    """The h200 and mi325x BF16 seed recipes in a fresh root and state directory."""
    root = smoke_root(tmp_path / "root", (H200, BF16))
    monkeypatch.setenv("INFERX_ROOT", str(root))
    monkeypatch.setenv("INFERX_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("INFERX_DATABASE_URL", raising=False)
    yield Project(root, Settings())


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    """A temporary Dagster instance."""
    with dg.instance_for_test() as test_instance:
        yield test_instance


def tick(defs: dg.Definitions, name: str, instance: dg.DagsterInstance, cursor: str | None) -> Any:
    """One evaluation of sensor ``name`` of ``defs`` with ``cursor``."""
    context = dg.build_sensor_context(
        instance=instance, cursor=cursor, definitions=defs, resources=dict(defs.resources or {})
    )
    return defs.resolve_sensor_def(name).evaluate_tick(context)


def unreachable_docker(tmp_path: Path) -> LauncherResource:
    """A Docker launcher whose only runner pool points at a socket that does not exist."""
    pools = tmp_path / "pools.yaml"
    pools.write_text(
        "source: test\npools:\n  nowhere:\n    skus: ['*']\n    hosts:\n"
        f"      - url: unix://{tmp_path}/no-such-docker.sock\n"
    )
    return LauncherResource(kind="docker", pools_file=str(pools))
