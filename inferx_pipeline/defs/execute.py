"""Running the pipeline without the UI: the local instance, pool limits, cell runs, publishing.

What ``inferx materialize``, ``inferx backfill`` and ``inferx images`` call. Runs go
through Dagster either in this process on an instance (the embedded default: the
instance under ``.inferx/dagster/``, or the one ``DAGSTER_HOME`` names) or, with a
webserver URL, to a deployment's run queue, where the daemon launches them as the
per-SKU pools allow. Either way one run covers one rectangle of cells (see
``matrix.partitions``), so each server group starts once for all its concurrencies.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import dagster as dg
from dagster_graphql import DagsterGraphQLClient
from pydantic import Field

from inferx_pipeline.defs.assets import pool_name, sweep_key
from inferx_pipeline.defs.jobs import PUBLISH_JOB, sweep_job_name
from inferx_pipeline.defs.liveness import owned_run
from inferx_pipeline.defs.partitions import add_images, range_tags
from inferx_pipeline.defs.tags import REASON_TAG
from inferx_pipeline.launch.pools import RunnerPools
from inferx_pipeline.launch.slurm_pools import SlurmPools, load_runner_pools
from inferx_pipeline.matrix.partitions import Cell, CellRange, covering_ranges
from inferx_pipeline.strict import FrozenModel

# The embedded instance: the run queue (for `inferx ui`), per-SKU pools holding whole runs.
EMBEDDED_INSTANCE = """\
# The embedded Dagster instance of inferx (written once by `inferx`; edit freely).
run_coordinator:
  module: dagster
  class: QueuedRunCoordinator
  config:
    # Dequeue every second, not every 5 s: a click in the UI starts its run sooner.
    dequeue_interval_seconds: 1
concurrency:
  pools:
    granularity: run
    default_limit: 1
# While `inferx ui` runs the daemon: a run stuck starting or cancelling fails, and a
# crashed run's pool slot is freed. Dagster's DefaultRunLauncher cannot check a run
# worker's health (its code server fails the runs whose worker it saw die), nor resume
# one; runs executed by `inferx materialize` are failed by their owner tag (defs/liveness.py).
run_monitoring:
  enabled: true
  start_timeout_seconds: 180
  cancel_timeout_seconds: 180
  poll_interval_seconds: 30
  max_resume_run_attempts: 0
  free_slots_after_run_end_seconds: 60
telemetry:
  enabled: false
"""


# In-process runs log to the terminal; DEBUG would print every Dagster engine event.
CONSOLE_INFO = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}


# The code location by module, so it loads from wherever the package is installed.
WORKSPACE = """\
# Written by `inferx dagster ui`: the code location of the installed inferx_pipeline.
load_from:
  - python_module:
      module_name: inferx_pipeline.defs.definitions
      attribute: defs
      location_name: inferx
"""


def workspace_file(home: Path) -> Path:
    """``home/workspace.yaml`` naming this package's code location (rewritten each call)."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / "workspace.yaml"
    path.write_text(WORKSPACE)
    return path


def local_instance(home: Path) -> dg.DagsterInstance:
    """The instance at ``home``, writing the embedded ``dagster.yaml`` there if it has none."""
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.is_file():
        config.write_text(EMBEDDED_INSTANCE)
    return dg.DagsterInstance.from_config(str(home))


def pool_limits(skus: Iterable[str], pools: RunnerPools | SlurmPools) -> dict[str, int]:
    """Pool name -> limit for each SKU: the ``nodes`` of the Docker or Slurm pool serving it.

    Raises LaunchError naming a SKU that no runner pool serves.
    """
    return {pool_name(sku): pools.pool_for(sku)[1].nodes for sku in skus}


def apply_pool_limits(instance: dg.DagsterInstance, limits: Mapping[str, int]) -> None:
    """Set each pool's slot count on ``instance`` (as ``dagster instance concurrency set``).

    Needed: with run granularity the queue limits only pools that have a slot count, so a
    pool never set would let every queued run of its SKU start at once.
    """
    for pool, limit in limits.items():
        instance.event_log_storage.set_concurrency_slots(pool, limit)


def prepare_instance(
    home: Path, skus: Iterable[str], pools_file: Path | None, environ: Mapping[str, str]
) -> dict[str, int]:
    """Create the instance at ``home`` if new and set the pool limit of each of ``skus``.

    Returns the limits set. Raises CatalogError for a malformed runner-pools file and
    LaunchError for a SKU no pool serves.
    """
    limits = pool_limits(skus, load_runner_pools(pools_file, environ))
    instance = local_instance(home)
    try:
        apply_pool_limits(instance, limits)
    finally:
        instance.dispose()
    return limits


class RangeRun(FrozenModel):
    """One run over one rectangle of cells, and how it ended."""

    cells: CellRange
    run_id: str
    status: str = Field(description="Dagster run status, e.g. SUCCESS, FAILURE, QUEUED.")
    jobs: int | None = Field(default=None, description="Jobs measured (known in-process).")
    counts: dict[str, int] = Field(default_factory=dict, description="Jobs per status.")
    interrupted: bool = Field(
        default=False, description="Stopped by SIGINT or SIGTERM (or its sweep was cancelled)."
    )


def _shown(metadata: Mapping[str, dg.MetadataValue]) -> tuple[int | None, dict[str, int]]:
    """(jobs, counts per status) from a sweep partition's or a failure's metadata."""
    jobs = metadata.get("jobs")
    counts = metadata.get("status_counts")
    return (
        jobs.value if isinstance(jobs, dg.IntMetadataValue) else None,
        dict(counts.value)
        if isinstance(counts, dg.JsonMetadataValue) and isinstance(counts.value, dict)
        else {},
    )


# What Dagster records as the error of a run or step that a signal stopped outside the sweep.
INTERRUPT_ERRORS = frozenset({"DagsterExecutionInterruptedError", "KeyboardInterrupt"})


def interrupt_error(event: dg.DagsterEvent) -> bool:
    """Whether ``event`` is a step or run failure raised by SIGINT or SIGTERM."""
    if event.is_step_failure:
        error = event.step_failure_data.error
    elif event.is_run_failure:
        error = event.job_failure_data.error
    else:
        return False
    return error is not None and error.cls_name in INTERRUPT_ERRORS


def _outcome(cell_range: CellRange, result: dg.ExecuteInProcessResult) -> RangeRun:
    jobs: int | None = None
    counts: Counter[str] = Counter()
    for event in result.get_asset_materialization_events():  # one per cell
        cell_jobs, cell_counts = _shown(event.materialization.metadata)
        jobs = (jobs or 0) + (cell_jobs or 0)
        counts.update(cell_counts)
    for event in result.all_events:
        if event.is_step_failure:
            failure = event.step_failure_data
            if failure.user_failure_data is not None:
                jobs, failed = _shown(failure.user_failure_data.metadata)
                counts = Counter(failed)
    status = "SUCCESS" if result.success else "FAILURE"
    # A cancelled job: the sweep was cut by the signal (or a job was cancelled from outside).
    interrupted = "cancelled" in counts or any(interrupt_error(e) for e in result.all_events)
    return RangeRun(
        cells=cell_range,
        run_id=result.run_id,
        status=status,
        jobs=jobs,
        counts=dict(counts),
        interrupted=interrupted,
    )


def sweep_run_config(
    sku: str, run_config: Mapping[str, object] | None, sweep: Mapping[str, object] | None
) -> dict[str, object]:
    """``run_config`` plus ``sweep`` (``SweepConfig`` choices, e.g. ``{"evals": "default"}``)
    as the config of ``sku``'s sweep asset."""
    if not sweep:
        return dict(run_config or {})
    op = sweep_key(sku).to_python_identifier()  # the asset's op, as Dagster names it
    return {**(run_config or {}), "ops": {op: {"config": dict(sweep)}}}


def run_cells_in_process(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    cells: Iterable[Cell],
    ladder_of: Mapping[str, Sequence[int]],
    *,
    reason: str,
    tags: Mapping[str, str] | None = None,
    run_config: Mapping[str, object] | None = None,
    sweep: Mapping[str, object] | None = None,
    stop: threading.Event | None = None,
) -> list[RangeRun]:
    """Materialize ``cells`` here, one run per rectangle, recorded on ``instance``.

    ``run_config`` is added to the console logger's (e.g. the launcher resource's), and
    ``sweep`` is each run's sweep asset config (``sweep_run_config``). Images are
    registered as partitions first. A failed run does not stop the others; an
    interrupted one does (SIGINT or SIGTERM while it runs: it ends FAILURE with its
    point cut, the rest cancelled, its servers stopped and its run record written), and
    so does ``stop`` (set, e.g. by a signal between runs) before the next run starts.
    Each run carries this process as its owner (``defs.liveness``).
    """
    cell_list = list(cells)
    add_images(instance, cell_list)
    runs: list[RangeRun] = []
    for cell_range in covering_ranges(cell_list, ladder_of):
        if stop is not None and stop.is_set():
            break
        runs.append(_execute(defs, instance, cell_range, reason, tags, run_config, sweep))
        if runs[-1].interrupted:
            break
    return runs


def _execute(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    cell_range: CellRange,
    reason: str,
    tags: Mapping[str, str] | None,
    run_config: Mapping[str, object] | None,
    sweep: Mapping[str, object] | None,
) -> RangeRun:
    """One run over ``cell_range``, in this process, owned by it."""
    job = defs.resolve_job_def(sweep_job_name(cell_range.sku))
    run_id, owner = owned_run()
    result = job.execute_in_process(
        run_config={**CONSOLE_INFO, **sweep_run_config(cell_range.sku, run_config, sweep)},
        instance=instance,
        run_id=run_id,
        tags={**range_tags(cell_range), **(tags or {}), REASON_TAG: reason, **owner},
        raise_on_error=False,
    )
    return _outcome(cell_range, result)


def publish_in_process(
    defs: dg.Definitions, instance: dg.DagsterInstance
) -> dg.ExecuteInProcessResult:
    """Run the publish job here: ingest every result, rebuild the leaderboard."""
    job = defs.resolve_job_def(PUBLISH_JOB)
    run_id, owner = owned_run()
    return job.execute_in_process(
        run_config=CONSOLE_INFO,
        instance=instance,
        run_id=run_id,
        tags={REASON_TAG: "command-line", **owner},
        raise_on_error=False,
    )


def graphql_client(url: str) -> DagsterGraphQLClient:
    """A client of the Dagster webserver at ``url`` (``http://host:port[/prefix]``)."""
    parts = urlsplit(url)
    return DagsterGraphQLClient(
        parts.hostname or "127.0.0.1",
        port_number=parts.port,
        use_https=parts.scheme == "https",
        path_prefix=parts.path.rstrip("/"),
    )


def submit_cells(
    client: DagsterGraphQLClient,
    cells: Iterable[Cell],
    ladder_of: Mapping[str, Sequence[int]],
    *,
    reason: str,
    tags: Mapping[str, str] | None = None,
    config: Mapping[str, object] | None = None,
    sweep: Mapping[str, object] | None = None,
) -> list[RangeRun]:
    """Queue one run per rectangle of ``cells`` on a deployment (its daemon launches them).

    ``config`` is the runs' run config (e.g. a ``launcher`` resource's config), ``sweep``
    their sweep asset config (point sizes, eval mode). The image partitions must exist
    there (``inferx images add`` against its instance).
    """
    runs = []
    for cell_range in covering_ranges(cells, ladder_of):
        run_id = client.submit_job_execution(
            sweep_job_name(cell_range.sku),
            run_config=sweep_run_config(cell_range.sku, config, sweep),
            tags={**range_tags(cell_range), **(tags or {}), REASON_TAG: reason},
        )
        runs.append(RangeRun(cells=cell_range, run_id=run_id, status="QUEUED"))
    return runs
