"""Slurm through its CLI on the submit host: ``sbatch --parsable``, ``squeue --json``, ``scancel``.

Why the CLI (and not ``slurmrestd`` or ``dagster-slurm``): every Slurm site has the
client commands on its login nodes, authenticated by munge as the submitting user, while
``slurmrestd`` is an extra daemon with JWT set-up that many sites do not run and whose
API versions change with each release (22.05 serves v0.0.36-v0.0.38, later releases
drop them). ``squeue --json`` is the same OpenAPI data model as ``slurmrestd``, so
parsing stays structured. ``dagster-slurm`` ships Python payloads to the cluster through
Dagster Pipes; an engine container that must serve HTTP for hours and be health-checked
and cancelled by us is not that shape.

Jobs that have ended stay visible to ``squeue -t all`` for ``MinJobAge`` seconds (300 by
default); there is no ``sacct`` without slurmdbd, so a job gone from ``squeue`` is ended
with its state unknown. Slurm 22.05's ``squeue --json`` ignores every filter option
(``--me``, ``--jobs``): what a command asks for is also picked from its answer here.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from inferx_pipeline.errors import LaunchError

COMMAND_TIMEOUT_S = 30.0
ACTIVE_STATES = frozenset({"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED"})


class SlurmJob(BaseModel):
    """The fields of one ``squeue --json`` job this package reads (the rest are ignored)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    job_id: int
    name: str
    cluster: str = ""
    job_state: str
    state_reason: str = ""
    nodes: str = ""
    comment: str = ""
    exit_code: int | None = None
    user_id: int | None = Field(default=None, description="Who submitted it (uid).")

    @field_validator("job_state", mode="before")
    @classmethod
    def _one_state(cls, value: object) -> object:
        # 23.02+ answers a list of state flags, the base state first.
        return value[0] if isinstance(value, list) and value else value

    @field_validator("exit_code", mode="before")
    @classmethod
    def _return_code(cls, value: object) -> object:
        # 23.02+ answers {"status": ..., "return_code": N} where 22.05 answers N.
        return value.get("return_code") if isinstance(value, dict) else value

    @property
    def active(self) -> bool:
        """Pending, running or still ending (not yet a terminal state)."""
        return self.job_state in ACTIVE_STATES


class _Queue(BaseModel):
    model_config = ConfigDict(extra="ignore")

    jobs: list[SlurmJob]


class SlurmCli:
    """Runs Slurm client commands with ``environ`` (``SLURM_CONF`` and secrets live there).

    ``cluster`` adds ``--clusters`` to every command (federations, ``sbatch -M``).
    """

    def __init__(self, environ: Mapping[str, str], *, cluster: str | None = None) -> None:
        self.environ = dict(environ)
        self.cluster = cluster

    def _run(self, argv: Sequence[str], stdin: str | None = None) -> str:
        cluster = [f"--clusters={self.cluster}"] if self.cluster else []
        command = [argv[0], *cluster, *argv[1:]]
        try:
            done = subprocess.run(
                command,
                input=stdin,
                capture_output=True,
                text=True,
                env=self.environ,
                timeout=COMMAND_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            raise LaunchError(
                f"{argv[0]}: cannot run: {err}; is this a Slurm submit host?"
            ) from err
        if done.returncode != 0:
            raise LaunchError(f"{' '.join(command)}: {done.stderr.strip() or 'failed'}")
        return done.stdout

    def submit(self, script: str, options: Iterable[str]) -> int:
        """``sbatch --parsable`` ``script`` (given on stdin); the new job's id."""
        out = self._run(["sbatch", "--parsable", *options], stdin=script).strip()
        try:
            return int(out.split(";", 1)[0])
        except ValueError as err:
            raise LaunchError(f"sbatch --parsable answered {out!r}; expected a job id") from err

    def _queue(self, *args: str) -> list[SlurmJob]:
        out = self._run(["squeue", "--json", *args])
        try:
            return _Queue.model_validate_json(out).jobs
        except ValidationError as err:
            raise LaunchError(f"squeue --json answered an unexpected document: {err}") from err

    def job(self, job_id: int) -> SlurmJob | None:
        """Job ``job_id`` in any state, None once Slurm has forgotten it (after MinJobAge)."""
        try:
            jobs = self._queue("--states=all", f"--jobs={job_id}")
        except LaunchError as err:
            if "Invalid job id" in str(err):
                return None
            raise
        return next((job for job in jobs if job.job_id == job_id), None)

    def active_jobs(self) -> list[SlurmJob]:
        """This user's jobs that are pending, running or ending (``squeue --me``)."""
        me = os.getuid()  # the commands run as this process's user
        return [job for job in self._queue("--me") if job.active and job.user_id == me]

    def cancel(self, job_id: int) -> None:
        """``scancel`` job ``job_id`` (an already ended job is not an error); LaunchError
        when Slurm refuses (e.g. another user's job) or does not answer."""
        self._run(["scancel", str(job_id)])

    def run_in_job(self, job_id: int, nodes: int, command: str) -> None:
        """Run the shell ``command`` once on each of running job ``job_id``'s ``nodes`` nodes.

        An overlapping step (``srun --overlap``): it needs none of the job's resources.
        Raises LaunchError when the job no longer runs or the command fails.
        """
        per_node = [f"--nodes={nodes}", f"--ntasks={nodes}", "--ntasks-per-node=1"]
        self._run(["srun", f"--jobid={job_id}", "--overlap", *per_node, "bash", "-c", command])

    def node_addresses(self, nodelist: str) -> dict[str, str]:
        """Node name -> its communication address (``NodeAddr``) for a nodelist like node[1-2]."""
        out = self._run(["sinfo", "-h", "-N", f"--nodes={nodelist}", "-o", "%N %o"])
        rows = [line.split() for line in out.splitlines() if line.strip()]
        return {row[0]: row[1] for row in rows if len(row) == 2}
