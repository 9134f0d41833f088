"""Stopping the service processes the test fixtures started (by their handle, never by name)."""

from __future__ import annotations

import signal
import subprocess


def stop(proc: subprocess.Popen[bytes], grace_s: float, signum: int = signal.SIGTERM) -> None:
    """Send ``signum`` to ``proc``, then SIGKILL it if it has not exited after ``grace_s``."""
    if proc.poll() is not None:
        return
    proc.send_signal(signum)
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(grace_s)
