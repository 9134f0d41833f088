"""A run whose process died is marked failed, whatever executed it.

Dagster's run monitoring (on in the embedded instance and in ``deploy/dagster.yaml``)
fails a run whose worker died only through the run launcher's health check: the
deployment's ``DockerRunLauncher`` has one, Dagster 1.13's ``DefaultRunLauncher`` has
none (its code server fails the runs whose worker subprocess it saw die), and a run
executed in the process of ``inferx materialize`` or ``inferx backfill`` has no worker
to check at all: killed with SIGKILL, it would stay STARTED for ever.

So every run executed in process carries its owner (host, PID and the PID's start
time: ``launch.ownership.Owner``, never fooled by a recycled PID) as the
``inferx/owner`` tag, and ``fail_dead_runs`` marks FAILURE each unfinished run whose
owner on this host is gone. It runs when ``inferx materialize`` or ``backfill`` starts
and in the ``fail_dead_runs`` sensor while the daemon runs. A run owned on another
host is left alone: its process cannot be checked from here.
"""

from __future__ import annotations

import uuid

import dagster as dg

from inferx_pipeline.launch.ownership import Owner

OWNER_TAG = "inferx/owner"

# Statuses of a run not ended yet (NOT_STARTED: created, its process not yet running it).
UNFINISHED = [
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]


def owned_run() -> tuple[str, dict[str, str]]:
    """A new run id and the owner tag naming this process as the one executing it."""
    run_id = str(uuid.uuid4())
    return run_id, {OWNER_TAG: Owner.current(run_id).label}


def dead_owner(run: dg.DagsterRun) -> Owner | None:
    """The owner of ``run`` when that process is gone; None when alive, elsewhere or untagged."""
    label = run.tags.get(OWNER_TAG)
    owner = Owner.from_label(run.run_id, label) if label is not None else None
    return owner if owner is not None and not owner.alive() else None


def fail_dead_runs(instance: dg.DagsterInstance, by: str) -> list[str]:
    """Mark FAILURE every unfinished run of ``instance`` whose owner process is gone.

    ``by`` names the caller in each run's failure message. Returns the ids of the runs
    failed (none again on a second call: failed runs are finished).
    """
    failed = []
    for run in instance.get_runs(dg.RunsFilter(statuses=UNFINISHED)):
        owner = dead_owner(run)
        if owner is None:
            continue
        instance.report_run_failed(
            run,
            message=(
                f"The process that ran this run ({owner.label}, host:pid:start) is gone "
                f"(killed or crashed); marked failed by {by}. Points it recorded are kept; "
                "materialize the partitions again to measure the rest."
            ),
        )
        failed.append(run.run_id)
    return failed
