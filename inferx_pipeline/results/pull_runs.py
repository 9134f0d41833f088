"""Swept pull-request runs, one row each beside their result rows.

A PR's rows carry its number and head (``pr_number``, ``head_sha``); what belongs to the
run as a whole is kept here: the sweep label and the baseline recipe the PR's
description named, so the site compares the run's pages with the same baseline as its
report.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field
from sqlalchemy import delete, select
from sqlalchemy.exc import SQLAlchemyError

from inferx_pipeline.errors import StoreError
from inferx_pipeline.results.store import ResultStore
from inferx_pipeline.results.tables import PULL_RUNS
from inferx_pipeline.strict import FrozenModel


class PullRun(FrozenModel):
    """One swept run of a pull request."""

    run_id: str
    pr_number: int = Field(ge=1)
    head_sha: str
    label: str | None = Field(default=None, description="The primary sweep label it ran under.")
    baseline_recipe: str | None = Field(
        default=None,
        description="The recipe a 'Baseline recipe:' line named (or the recipe of the PR it "
        "named); None: its own.",
    )
    baseline_image: str | None = Field(
        default=None, description="The baseline's image or tag; None: its newest shown."
    )
    recorded_at: datetime


def record_pull_run(store: ResultStore, run: PullRun) -> None:
    """Store ``run``, replacing a row of the same run id (a retried run). StoreError
    (nothing kept) when the database fails."""
    try:
        with store.engine.begin() as conn:
            conn.execute(delete(PULL_RUNS).where(PULL_RUNS.c.run_id == run.run_id))
            conn.execute(PULL_RUNS.insert(), [run.model_dump()])
    except SQLAlchemyError as err:
        raise StoreError(f"pull_request_runs: cannot write run {run.run_id}: {err}") from err


def read_pull_runs(store: ResultStore) -> list[PullRun]:
    """Every recorded PR run, oldest first. StoreError when the query fails."""
    try:
        with store.engine.connect() as conn:
            found = conn.execute(select(PULL_RUNS).order_by(PULL_RUNS.c.recorded_at)).mappings()
            return [PullRun.model_validate(dict(row)) for row in found]
    except SQLAlchemyError as err:
        raise StoreError(f"pull_request_runs: cannot read: {err}") from err


def baseline_recipes(runs: list[PullRun]) -> dict[str, str]:
    """Run id -> the baseline recipe its PR named, for the runs that named one."""
    return {run.run_id: run.baseline_recipe for run in runs if run.baseline_recipe}


def baseline_images(runs: list[PullRun]) -> dict[str, str]:
    """Run id -> the baseline image its PR named, for the runs that named one."""
    return {run.run_id: run.baseline_image for run in runs if run.baseline_image}


def newest_run_of(runs: list[PullRun], number: int) -> PullRun | None:
    """Pull request ``number``'s newest recorded run; None when it has none here."""
    mine = [run for run in runs if run.pr_number == number]
    return max(mine, key=lambda run: run.recorded_at) if mine else None
