"""The process ledger on real processes: a dead owner's group is stopped, nothing else is.

Each test starts its own process groups (a leader and a child, like an engine and its
workers) and its own stand-in owner, then kills the owner with SIGKILL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from inferx_pipeline.launch.ownership import Owner, ProcessLedger, group_members
from tests.launch.owners import dead_owner

SETTLE_S = 10.0
# A group leader that starts one child in its own group, then both wait to be stopped.
GROUP = (
    "import subprocess, sys, time; "
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
    "print('ready', flush=True); time.sleep(600)"
)


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:  # whatever a failed test left: stop by handle, group first
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _group(procs: list[subprocess.Popen[bytes]]) -> int:
    proc = subprocess.Popen(
        [sys.executable, "-c", GROUP], stdout=subprocess.PIPE, start_new_session=True
    )
    procs.append(proc)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    deadline = time.monotonic() + SETTLE_S
    while len(group_members(proc.pid)) < 2:
        assert time.monotonic() < deadline, "the group's child never started"
    return proc.pid


def test_the_group_of_a_dead_owner_is_stopped_and_forgotten(
    started: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    ledger = ProcessLedger(tmp_path / "owned", grace_s=5.0)
    pgid = _group(started)
    ledger.record(dead_owner("dead-run"), pgid)
    assert ledger.reap().stopped == (str(pgid),)
    assert group_members(pgid) == []
    assert ledger.entries() == []


def test_groups_of_live_owners_stay(started: list[subprocess.Popen[bytes]], tmp_path: Path) -> None:
    ledger = ProcessLedger(tmp_path / "owned", grace_s=5.0)
    pgid = _group(started)
    ledger.record(Owner.current("this-run"), pgid)
    assert ledger.reap().stopped == ()
    assert len(group_members(pgid)) == 2
    assert [e.pgid for e in ledger.entries()] == [pgid]


def test_a_recycled_leader_pid_is_never_signalled(
    started: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    ledger = ProcessLedger(tmp_path / "owned", grace_s=5.0)
    pgid = _group(started)
    ledger.record(dead_owner("dead-run"), pgid)
    entry = ledger.entries()[0]
    # The same PID, but a process that started at another time: not the group we ran.
    recycled = entry.model_copy(update={"started": entry.started + 1})
    (tmp_path / "owned" / f"{pgid}.json").write_text(recycled.model_dump_json())
    assert ledger.reap().stopped == ()
    assert len(group_members(pgid)) == 2
    assert ledger.entries() == []


def test_an_owner_label_names_its_process() -> None:
    owner = Owner.current("run-1")
    assert Owner.from_label("run-1", owner.label) == owner
    assert owner.alive()
    assert Owner.from_label("run-1", "not-a-label") is None
