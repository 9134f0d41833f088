"""Run sensors: publish after sweeps, record failed sweeps and retry transient ones, fail dead runs.

All run by default (a sweep started from the UI rebuilds the leaderboard with no
sensor to switch on first); they need the daemon, which ``dagster dev`` starts.

Each tick that requests nothing says why in its skip reason. Dagster 1.13 has no tick
preview for run-status sensors (the UI disables the button for every sensor type but
the standard one), and its run-status wrapper ends a tick in which no run reached the
status with "Sensor function returned an empty result": that message, in these two
sensors' tick history, means no run finished since the last tick.

- ``publish_after_sweeps``: a sweep run that succeeded -> the publish job (ingest, then
  the leaderboard), so the site follows the sweeps.
- ``record_failed_sweeps``: a sweep run that failed -> its failed jobs (from the run's
  record in the artifact store) and a retry decision in the retry ledger
  (``.inferx/retries.jsonl``); one retry run over the same partitions when every failure
  is transient (``catalog/retry-policy.yaml``); the publish job either way, since the
  good points of a failed run count.
- ``fail_dead_runs``: an unfinished run whose process on this host died (an
  ``inferx materialize`` killed with SIGKILL) -> FAILURE, so it shows as failed and its
  failure is recorded like any other.
"""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg

from inferx_pipeline.defs.assets import sweep_key
from inferx_pipeline.defs.jobs import PUBLISH_JOB, sweep_job_name
from inferx_pipeline.defs.liveness import fail_dead_runs
from inferx_pipeline.defs.partitions import RANGE_END_TAG, RANGE_START_TAG
from inferx_pipeline.defs.resources import ProjectResource
from inferx_pipeline.defs.tags import REASON_TAG, RETRY_OF_TAG, RETRY_TAG
from inferx_pipeline.sweep.retries import (
    LedgerEntry,
    RetryLedger,
    decide,
    failed_jobs,
    load_retry_policy,
)

PARTITION_TAG = "dagster/partition"
LEDGER_FILE = "retries.jsonl"
# How often the daemon looks for runs whose process died (each look is one runs query).
DEAD_RUNS_INTERVAL_S = 30


def _swept_sku(run: dg.DagsterRun, skus: Sequence[str]) -> str | None:
    """The SKU whose sweep ``run`` measured: by its sweep job, or its sweep asset (UI)."""
    selected = run.asset_selection or frozenset()
    return next(
        (sku for sku in skus if run.job_name == sweep_job_name(sku) or sweep_key(sku) in selected),
        None,
    )


def _not_a_sweep(run: dg.DagsterRun, skus: Sequence[str]) -> str:
    """Why a finished run asks for nothing: it is not a sweep run."""
    return (
        f"run {run.run_id} (job {run.job_name}) measured no sweep; only runs of "
        f"{', '.join(sweep_job_name(sku) for sku in skus) or 'a sweep job'} or of a sweep asset "
        "count"
    )


def publish_sensor(
    skus: Sequence[str], publish: dg.UnresolvedAssetJobDefinition
) -> dg.SensorDefinition:
    """Requests the publish job after every successful sweep run."""

    @dg.run_status_sensor(
        name="publish_after_sweeps",
        run_status=dg.DagsterRunStatus.SUCCESS,
        request_job=publish,
        description=(
            "Rebuilds results and the leaderboard after each successful sweep run. A tick "
            'with no finished run says "Sensor function returned an empty result" (Dagster\'s '
            "words); run-status sensors have no tick preview."
        ),
        default_status=dg.DefaultSensorStatus.RUNNING,
    )
    def publish_after_sweeps(context: dg.RunStatusSensorContext) -> dg.RunRequest | dg.SkipReason:
        run = context.dagster_run
        if _swept_sku(run, skus) is None:
            return dg.SkipReason(_not_a_sweep(run, skus))
        return dg.RunRequest(
            run_key=f"publish-after:{run.run_id}",
            tags={REASON_TAG: "sweep-succeeded", "inferx/after-run": run.run_id},
        )

    return publish_after_sweeps


def _partition_tags(run: dg.DagsterRun) -> dict[str, str]:
    names = (PARTITION_TAG, RANGE_START_TAG, RANGE_END_TAG)
    return {name: run.tags[name] for name in names if name in run.tags}


def failure_sensor(
    skus: Sequence[str],
    jobs: Sequence[dg.UnresolvedAssetJobDefinition],
) -> dg.SensorDefinition:
    """Records failed sweep runs in the retry ledger and requests retries and publishing."""

    @dg.run_failure_sensor(
        name="record_failed_sweeps",
        request_jobs=list(jobs),
        description=(
            "Records the failed jobs of failed sweep runs; retries transient failures. A tick "
            'with no failed run says "Sensor function returned an empty result" (Dagster\'s '
            "words); run-status sensors have no tick preview."
        ),
        default_status=dg.DefaultSensorStatus.RUNNING,
    )
    def record_failed_sweeps(
        context: dg.RunFailureSensorContext, project: ProjectResource
    ) -> list[dg.RunRequest] | dg.SkipReason:
        run = context.dagster_run
        sku = _swept_sku(run, skus)
        if sku is None:
            return dg.SkipReason(_not_a_sweep(run, skus))
        settings = project.settings()
        failed = failed_jobs(project.artifacts(), run.run_id)
        retries = int(run.tags.get(RETRY_TAG, "0"))
        decision = decide(
            failed, retries_so_far=retries, policy=load_retry_policy(settings.catalog_dir)
        )
        partitions = _partition_tags(run)
        RetryLedger(settings.state / LEDGER_FILE).append(
            LedgerEntry(
                run_id=run.run_id,
                sku=sku,
                partitions=partitions,
                failed=tuple(failed),
                decision=decision,
                retries_so_far=retries,
            )
        )
        context.log.info(f"run {run.run_id}: {len(failed)} failed jobs; {decision.reason}")
        requests = [
            dg.RunRequest(
                job_name=PUBLISH_JOB,
                run_key=f"publish-after:{run.run_id}",
                tags={REASON_TAG: "sweep-failed", "inferx/after-run": run.run_id},
            )
        ]
        if decision.retry and partitions:
            requests.append(
                dg.RunRequest(
                    job_name=sweep_job_name(sku),
                    run_key=f"retry:{run.run_id}",
                    partition_key=partitions.get(PARTITION_TAG),
                    # The retry measures the same point size and options as the failed run.
                    run_config=run.run_config,
                    tags={
                        **{k: v for k, v in partitions.items() if k != PARTITION_TAG},
                        RETRY_TAG: str(retries + 1),
                        RETRY_OF_TAG: run.run_id,
                        REASON_TAG: f"retry: {decision.reason}",
                    },
                )
            )
        return requests

    return record_failed_sweeps


def dead_runs_sensor() -> dg.SensorDefinition:
    """Marks FAILURE the unfinished runs whose owner process is gone (``defs.liveness``)."""

    @dg.sensor(
        name="fail_dead_runs",
        minimum_interval_seconds=DEAD_RUNS_INTERVAL_S,
        description=(
            "Marks failed the runs left STARTED by an `inferx materialize` or `backfill` "
            "process of this host that died (SIGKILL, a crash)."
        ),
        default_status=dg.DefaultSensorStatus.RUNNING,
    )
    def fail_dead_runs_sensor(context: dg.SensorEvaluationContext) -> dg.SkipReason:
        failed = fail_dead_runs(context.instance, by="the fail_dead_runs sensor")
        if not failed:
            return dg.SkipReason(
                "nothing to mark failed: no unfinished run's process on this host has died"
            )
        return dg.SkipReason(f"marked failed: {', '.join(failed)}")

    return fail_dead_runs_sensor
