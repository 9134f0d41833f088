"""SIGTERM ends a sweep the way Ctrl-C does: servers stopped, the run record written.

``kill PID``, a container stop and a scheduler's cancel all send SIGTERM, whose default
action ends the process at once, leaving its servers running and its run unrecorded.
Inside ``terminate_as_interrupt`` a SIGTERM is turned into a SIGINT, so the first one
stops the sweep gracefully (the point being measured is cut, the rest are cancelled)
and a second one interrupts whatever is left, exactly like a second Ctrl-C.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType


def _as_interrupt(signum: int, frame: FrameType | None) -> None:
    signal.raise_signal(signal.SIGINT)


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Handle SIGTERM as SIGINT for the block (a no-op away from the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may install signal handlers
        return
    previous = signal.signal(signal.SIGTERM, _as_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
