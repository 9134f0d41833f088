"""Owners for ownership tests: one whose process ran on this host and is gone."""

from __future__ import annotations

import subprocess
import sys

from inferx_pipeline.launch.ownership import Owner, process_start


def dead_owner(run_id: str) -> Owner:
    """The owner of ``run_id`` as a process of this host that started and was then killed."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    started = process_start(proc.pid)
    proc.kill()
    proc.wait()
    assert started is not None  # read before the kill, while it ran
    return Owner.current(run_id).model_copy(update={"pid": proc.pid, "started": started})
