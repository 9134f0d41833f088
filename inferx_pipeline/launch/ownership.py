"""Every server belongs to a run, and a run to a live process: what outlives its run is stopped.

An ``Owner`` is the run id plus the process that runs it (host, PID and the PID's
start time, so a recycled PID is never mistaken for it). A container carries its owner
as a label; a child process group is written to the ``ProcessLedger``, one file per
group::

    STATE/owned/<pgid>.json     {"owner": {...}, "pgid": 4711, "started": 912345}

A Slurm job carries it in its comment (``launch/slurm.py``). Every launcher follows
the same rule: what an owner that is gone left (killed with SIGKILL, crashed, a host
reboot) is stopped at the start of the next sweep; what a live owner runs (this process
included, or an owner on another host, which cannot be checked from here) and what names
no owner is left alone. Each clean-up answers a ``Reaped``: a server that cannot be
stopped is reported there and does not keep the others from being stopped. At the start
of a sweep, ``ProcessLedger.reap`` does this for the process groups. Linux only: it
reads ``/proc``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from pathlib import Path

from pydantic import Field, ValidationError

from inferx_pipeline.atomic import write_atomic
from inferx_pipeline.strict import FrozenModel

REAP_POLL_S = 0.05


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state first); None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    return stat.rsplit(")", 1)[1].split()


def process_start(pid: int) -> int | None:
    """When ``pid`` started (clock ticks after boot, /proc field 22); None when it is gone."""
    fields = _stat(pid)
    return None if fields is None else int(fields[19])


def group_members(pgid: int) -> list[int]:
    """The running PIDs of process group ``pgid`` (zombies hold nothing and are skipped)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields is not None and fields[0] != "Z" and int(fields[2]) == pgid:
                found.append(int(entry.name))
    return found


class Owner(FrozenModel):
    """A run and the process running it."""

    run_id: str
    host: str
    pid: int
    started: int

    @classmethod
    def current(cls, run_id: str) -> Owner:
        """This process, running ``run_id``."""
        pid = os.getpid()
        return cls(run_id=run_id, host=socket.gethostname(), pid=pid, started=_started(pid))

    def alive(self) -> bool:
        """Whether the owning process still runs; an owner on another host counts as alive
        (it cannot be checked from here, and a live run's servers must never be stopped)."""
        if self.host != socket.gethostname():
            return True
        return process_start(self.pid) == self.started

    @property
    def label(self) -> str:
        """``host:pid:started``, for a container label."""
        return f"{self.host}:{self.pid}:{self.started}"

    @classmethod
    def from_label(cls, run_id: str, label: str) -> Owner | None:
        """The owner a ``label`` names; None when it is not one."""
        host, _, rest = label.rpartition(":")
        host, _, pid = host.rpartition(":")
        if not (host and pid.isdigit() and rest.isdigit()):
            return None
        return cls(run_id=run_id, host=host, pid=int(pid), started=int(rest))


def orphaned(owner: Owner | None) -> bool:
    """Whether a server whose owner is ``owner`` outlived it (None: no owner, not ours)."""
    return owner is not None and not owner.alive()


class Reaped(FrozenModel):
    """What one clean-up of dead owners' servers did (``SweepBackend.prepare``)."""

    kind: str = Field(description="What was stopped, e.g. 'process group', 'Slurm job'.")
    stopped: tuple[str, ...] = Field(default=(), description="Ids of the servers stopped.")
    failed: dict[str, str] = Field(
        default_factory=dict, description="Id -> why it could not be stopped (it may still run)."
    )

    def note(self) -> str | None:
        """One line for the run's record when a server could not be stopped, else None."""
        if not self.failed:
            return None
        each = "; ".join(f"{key}: {why}" for key, why in self.failed.items())
        return (
            f"could not stop {len(self.failed)} {self.kind}(s) of dead runs ({each}); "
            "they may still hold resources: stop them by hand"
        )


def _started(pid: int) -> int:
    started = process_start(pid)
    if started is None:  # only for a PID that is not running, never for a live child
        raise ProcessLookupError(pid)
    return started


class OwnedGroup(FrozenModel):
    """A process group this host started for ``owner`` (its leader's PID is the group id)."""

    owner: Owner
    pgid: int
    started: int


class ProcessLedger:
    """One file per owned process group under ``root``; see the module docstring."""

    def __init__(self, root: Path, *, grace_s: float = 10.0) -> None:
        self.root = root
        self.grace_s = grace_s

    def record(self, owner: Owner, pgid: int) -> None:
        """Remember that ``owner`` leads process group ``pgid`` (started just now).

        A group already gone leaves nothing to own and is not recorded."""
        started = process_start(pgid)
        if started is not None:
            entry = OwnedGroup(owner=owner, pgid=pgid, started=started)
            write_atomic(self._path(pgid), entry.model_dump_json().encode())

    def forget(self, pgid: int) -> None:
        """The group is stopped: drop its file (idempotent)."""
        self._path(pgid).unlink(missing_ok=True)

    def entries(self) -> list[OwnedGroup]:
        """Every readable entry (a torn file from a crash is dropped: nothing can be proven)."""
        found = []
        for path in sorted(self.root.glob("*.json")):
            try:
                found.append(OwnedGroup.model_validate_json(path.read_bytes()))
            except (OSError, ValidationError):
                path.unlink(missing_ok=True)
        return found

    def reap(self) -> Reaped:
        """Stop the groups of dead owners (SIGTERM, then SIGKILL after ``grace_s``) and
        forget them. Groups of live owners stay; a group that cannot be signalled (another
        user's) is reported in ``failed`` and kept for the next clean-up."""
        stopped, failed = [], {}
        for entry in self.entries():
            if not orphaned(entry.owner):
                continue
            try:
                if stop_group(entry.pgid, entry.started, self.grace_s):
                    stopped.append(str(entry.pgid))
            except OSError as err:
                failed[str(entry.pgid)] = str(err)
                continue
            self.forget(entry.pgid)
        return Reaped(kind="process group", stopped=tuple(stopped), failed=failed)

    def _path(self, pgid: int) -> Path:
        return self.root / f"{pgid}.json"


def stop_group(pgid: int, started: int, grace_s: float) -> bool:
    """Stop process group ``pgid`` whose leader started at ``started``; False when it is gone.

    A leader PID now running a different program (its start time differs) means the
    group is someone else's: it is left alone. A group whose leader died but whose
    members live is still ours (the kernel does not reuse a PID while its group lives).
    """
    leader = process_start(pgid)
    if leader is not None and leader != started:
        return False
    if not group_members(pgid):
        return False
    for sig in (signal.SIGTERM, signal.SIGKILL):
        _signal(pgid, sig)
        deadline = time.monotonic() + grace_s
        while group_members(pgid) and time.monotonic() < deadline:
            time.sleep(REAP_POLL_S)  # polling the process table, bounded by the deadline
        if not group_members(pgid):
            break
    return True


def _signal(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)
