"""A sweep on a terminal: a rich progress bar per server group, then a summary table."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn
from rich.table import Table

from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.sweep.groups import ServerGroup
from inferx_pipeline.sweep.report import JobOutcome, SweepReport

STATUS_STYLES: dict[str, str] = {"ok": "green", "reused": "cyan", "cancelled": "yellow"}


class RichProgress:
    """One bar per server group, advancing per concurrency; implements ``SweepProgress``."""

    def __init__(self, console: Console) -> None:
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            console=console,
            transient=False,
        )
        self.tasks: dict[str, TaskID] = {}

    def __enter__(self) -> RichProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def group_started(self, group: ServerGroup, index: int, total: int) -> None:
        label = f"[{index + 1}/{total}] {group.name}"
        task = self.progress.add_task(label, total=len(group.jobs))
        # By each job's fingerprint: a group's eval jobs have their own.
        self.tasks |= dict.fromkeys((job.fingerprint for job in group.jobs), task)

    def point_started(self, job: BenchmarkJob) -> None:
        task = self.tasks.get(job.fingerprint)
        if task is not None:
            name = self.progress.tasks[task].description.split(" c")[0]
            self.progress.update(task, description=f"{name} c{job.conc}")

    def point_finished(self, outcome: JobOutcome) -> None:
        task = self.tasks.get(outcome.fingerprint)
        if task is not None:
            self.progress.advance(task)

    def group_finished(self, group: ServerGroup) -> None:
        return None


def summary_table(report: SweepReport) -> Table:
    """One row per job: status, throughput, latency (an eval job: its score), and why it failed."""
    table = Table(
        title=f"sweep {report.run_id[:12]}: {report.server_launches} server launches",
        caption="\n".join(report.notes) or None,
    )
    columns = ["job", "status", "out tok/s", "TPOT ms", "AL", "eval", "attempts", "detail"]
    # Only a sweep on Slurm has allocations to name.
    on_slurm = any(o.slurm_job for o in report.outcomes)
    for column in [*columns, "slurm job"] if on_slurm else columns:
        table.add_column(column, overflow="fold")
    for o in report.outcomes:
        r = o.result
        al = r.acceptance.acceptance_length if r and r.acceptance else None
        table.add_row(
            o.job_id,
            f"[{STATUS_STYLES.get(o.status, 'red')}]{o.status}[/]",
            f"{r.output_throughput:.1f}" if r else "",
            f"{r.mean_tpot_ms:.2f}" if r and r.mean_tpot_ms is not None else "",
            f"{al:.2f}" if al is not None else "",
            _score(o),
            ",".join(str(a) for a in o.attempts),
            o.message.splitlines()[0][:120] if o.message else "",
            *([o.slurm_job] if on_slurm else []),
        )
    return table


def _score(outcome: JobOutcome) -> str:
    """``0.420 < 0.91`` (exact match against the threshold); empty without a score."""
    scored = outcome.eval
    if scored is None:
        return ""
    sign = ">=" if scored.passed else "<"
    return f"{scored.exact_match:.3f} {sign} {scored.threshold:g}"


def counts_line(report: SweepReport) -> str:
    """``48 jobs: 40 ok, 8 reused`` (statuses in alphabetical order)."""
    counts = ", ".join(f"{n} {status}" for status, n in sorted(report.counts().items()))
    return f"{len(report.outcomes)} jobs: {counts}"
