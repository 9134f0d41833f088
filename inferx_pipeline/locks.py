"""An exclusive lock between processes on one host: ``flock`` on a lock file.

::

    with file_lock(site_dir.with_name("site.lock")):   # a second holder waits here
        rebuild(site_dir)

The kernel drops the lock when its holder exits, however it exits, so a killed
process never leaves a stale lock behind (unlike a PID or marker file).
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if absent) for the block; blocks to get it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
