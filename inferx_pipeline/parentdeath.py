"""Children that die with their parent: the kernel's parent-death signal (Linux).

A server or client shard whose parent is killed with SIGKILL would run on under PID 1.
``die_with(parent)``, called in the child, asks the kernel for SIGTERM when the parent
goes; ``preexec()`` is the same as a ``subprocess.Popen(preexec_fn=...)``. Elsewhere
than Linux both do nothing (the run's ownership records still let the next run stop
what is left, see ``launch/ownership.py``).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from collections.abc import Callable

PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def die_with(parent: int) -> None:
    """In a child of ``parent``: get SIGTERM when it dies (at once if it already has)."""
    if not sys.platform.startswith("linux"):
        return
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


def preexec() -> Callable[[], None] | None:
    """A ``preexec_fn`` arming ``die_with(this process)``; None off the main thread.

    The kernel sends the signal when the *thread* that forked exits, which for a worker
    thread is long before the run ends.
    """
    if (
        not sys.platform.startswith("linux")
        or threading.current_thread() is not threading.main_thread()
    ):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here, not between fork and exec
    parent = os.getpid()

    def arm() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGTERM)

    return arm
