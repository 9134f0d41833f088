"""``inferx materialize`` leaves the instance fresh: upstream first, content-hash data versions.

Staleness is judged by Dagster's own resolver (what the UI's "Unsynced" badge shows) and
the automation sensor's condition by ``dg.evaluate_automation_conditions`` (what its tick
in the daemon evaluates).
"""

from __future__ import annotations

from collections.abc import Iterator

import dagster as dg
import pytest
from click.testing import CliRunner, Result

# Dagster exports no staleness API; the resolver and its loading context are the ones the
# webserver builds for an asset node's staleStatus.
from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView, TemporalContext
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._time import get_current_datetime

from inferx_pipeline.cli import cli
from inferx_pipeline.defs.assets import sweep_key
from inferx_pipeline.defs.execute import local_instance
from inferx_pipeline.defs.upstream import UPSTREAM
from tests.defs.conftest import Project
from tests.defs.test_cli import FAST, H200


def _materialize() -> Result:
    """``inferx materialize`` of the h200 seed, one-request points, no publish."""
    return CliRunner().invoke(cli, ["materialize", "--recipe", H200, "--no-publish", *FAST])


@pytest.fixture
def home(project: Project) -> Iterator[dg.DagsterInstance]:
    """The project's instance after ``inferx materialize`` of the h200 seed (no publish)."""
    result = _materialize()
    assert result.exit_code == 0, result.output
    instance = local_instance(project.settings.dagster_home)
    try:
        yield instance
    finally:
        instance.dispose()


def _stale(defs: dg.Definitions, instance: dg.DagsterInstance) -> dict[str, list[str]]:
    """Each upstream asset and materialized h200 cell that is not FRESH -> its stale causes."""
    graph = defs.resolve_asset_graph()
    view = AssetGraphView(
        temporal_context=TemporalContext(effective_dt=get_current_datetime(), last_event_id=None),
        instance=instance,
        asset_graph=graph,
    )
    resolver = CachingStaleStatusResolver(instance, asset_graph=graph, loading_context=view)
    cells = sorted(instance.get_materialized_partitions(sweep_key("h200")))
    assert len(cells) == 8
    targets = [(key, None) for key in UPSTREAM] + [(sweep_key("h200"), cell) for cell in cells]
    return {
        f"{key.to_user_string()}[{partition}]": [
            f"{cause.asset_key.to_user_string()} {cause.reason}"
            for cause in resolver.get_stale_causes(key, partition)
        ]
        for key, partition in targets
        if resolver.get_status(key, partition) != StaleStatus.FRESH
    }


def _materializations(instance: dg.DagsterInstance, key: dg.AssetKey) -> int:
    return len(instance.fetch_materializations(key, limit=100).records)


def test_materialize_leaves_cells_and_upstream_fresh_and_remakes_only_changed_upstream(
    project: Project, home: dg.DagsterInstance
) -> None:
    defs = project.definitions()
    assert _stale(defs, home) == {}
    # The automation sensor's tick has nothing to do: no upstream asset is missing.
    evaluated = dg.evaluate_automation_conditions(defs=defs, instance=home)
    assert evaluated.total_requested == 0
    # Re-materializing unchanged upstream (by hand in the UI, or a sensor) keeps cells fresh.
    remade = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=home, asset_selection=list(UPSTREAM)
    )
    assert remade.success
    assert _stale(defs, home) == {}
    # Unchanged content: a second materialize runs no upstream run.
    assert _materialize().exit_code == 0
    assert [_materializations(home, key) for key in UPSTREAM] == [2, 2, 2]
    # The curves changed: golden_curves and the matrix after it are remade, not the recipes.
    curve = next((project.root / "golden_al_distribution").rglob("*.yaml"))
    curve.write_text(curve.read_text() + "\n# edited\n")
    assert _materialize().exit_code == 0
    assert [_materializations(home, key) for key in UPSTREAM] == [2, 3, 3]
    assert _stale(defs, home) == {}
