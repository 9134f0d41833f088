"""A sweep on a terminal: a rich progress bar per server group, then a summary table.

Off a terminal (a pipe, a file, CI logs) a table is printed as wide as its content, so
each row stays on one line; a terminal's width, or ``COLUMNS`` when set, still rules.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn
from rich.table import Table

from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.sweep.groups import ServerGroup
from inferx_pipeline.sweep.report import JobOutcome, SweepReport

STATUS_STYLES: dict[str, str] = {"ok": "green", "reused": "cyan", "cancelled": "yellow"}
# The summary's columns in order; ``_cells`` gives a row's cells in the same order.
COLUMNS = ("job", "status", "out tok/s", "TPOT ms", "AL", "eval", "attempts", "detail", "slurm job")
# Shown even when a sweep selected no job.
_ALWAYS = frozenset({"job", "status"})
# Columns whose cells are short and whole (a status, a number): never wrapped, so a narrow
# terminal shrinks the job id and detail columns instead of splitting these.
_WHOLE = frozenset({"status", "out tok/s", "TPOT ms", "AL", "eval", "attempts", "slurm job"})
# Wider than any table we print: measuring against it gives a table's natural width.
_UNBOUNDED = 100_000


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
    """One row per job: status, throughput, latency (an eval job: its score), and why it failed.

    A column empty in every row (no AL without speculative decoding, no Slurm job off
    Slurm) is left out, so the rest keep their width.
    """
    table = Table(
        title=f"sweep {report.run_id[:12]}: {report.server_launches} server launches",
        caption="\n".join(report.notes) or None,
    )
    rows = [_cells(outcome) for outcome in report.outcomes]
    shown = [i for i, name in enumerate(COLUMNS) if name in _ALWAYS or any(row[i] for row in rows)]
    for i in shown:
        table.add_column(COLUMNS[i], overflow="fold", no_wrap=COLUMNS[i] in _WHOLE)
    for row in rows:
        table.add_row(*(row[i] for i in shown))
    return table


def _cells(o: JobOutcome) -> list[str]:
    """The row of ``o``, one cell per name in ``COLUMNS`` ("" where it has nothing)."""
    r = o.result
    al = r.acceptance.acceptance_length if r and r.acceptance else None
    return [
        o.job_id,
        f"[{STATUS_STYLES.get(o.status, 'red')}]{o.status}[/]",
        f"{r.output_throughput:.1f}" if r else "",
        f"{r.mean_tpot_ms:.2f}" if r and r.mean_tpot_ms is not None else "",
        f"{al:.2f}" if al is not None else "",
        _score(o),
        ",".join(str(a) for a in o.attempts),
        o.message.splitlines()[0][:120] if o.message else "",
        o.slurm_job,
    ]


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


def print_fitted(console: Console, renderable: RenderableType, environ: Mapping[str, str]) -> None:
    """Print ``renderable`` on ``console``; off a terminal, as wide as its content needs.

    On a terminal, or with ``COLUMNS`` set in ``environ``, the console's width rules (rich
    reads both). Otherwise the width is the renderable's natural width (at least the
    console's), so no table row is wrapped.
    """
    if console.is_terminal or environ.get("COLUMNS", "").isdigit():
        console.print(renderable)
        return
    options = console.options.update_width(_UNBOUNDED)
    natural = Measurement.get(console, options, renderable).maximum
    Console(file=console.file, width=max(natural, console.width)).print(renderable)
