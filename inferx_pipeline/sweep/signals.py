"""SIGTERM ends a sweep the way Ctrl-C does: servers stopped, the run record written.

``kill PID``, a container stop and a scheduler's cancel all send SIGTERM, whose default
action ends the process at once, leaving its servers running and its run unrecorded.
Inside ``terminate_as_interrupt`` a SIGTERM is turned into a SIGINT and a SIGINT raises
``KeyboardInterrupt``, so the first one stops the sweep gracefully (the point being
measured is cut, the rest are cancelled) and a second one interrupts whatever is left,
exactly like a second Ctrl-C.

The block takes SIGINT over from whoever held it: Dagster's run worker raises its own
interrupt error from anywhere (``run_sweep`` would neither catch it nor record the run,
and uvloop swallows it in the middle of a point), and a shell that starts a command in
the background leaves SIGINT ignored (a SIGTERM turned into it would be lost). The
handlers before the block come back after it.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

# What signal.signal returns and takes back: a handler, SIG_DFL or SIG_IGN, or None for a
# handler installed outside Python (which cannot be put back from here).
Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


def _as_interrupt(signum: int, frame: FrameType | None) -> None:
    signal.raise_signal(signal.SIGINT)


def _restore(previous_int: Handler, previous_term: Handler) -> None:
    for signum, previous in ((signal.SIGTERM, previous_term), (signal.SIGINT, previous_int)):
        if previous is not None:
            signal.signal(signum, previous)


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt and SIGTERM acts as SIGINT for the block.

    A no-op away from the main thread (only it may install signal handlers).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    previous_term = signal.signal(signal.SIGTERM, _as_interrupt)
    try:
        yield
    finally:
        _restore(previous_int, previous_term)


@contextlib.contextmanager
def interrupt_event() -> Iterator[threading.Event]:
    """An event that SIGINT and SIGTERM set during the block, where they stop nothing else.

    For a loop that checks it between steps which handle the signals themselves (each
    Dagster run and sweep inside it). Away from the main thread: an event never set.
    """
    event = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield event
        return

    def _set(signum: int, frame: FrameType | None) -> None:
        event.set()

    previous_int = signal.signal(signal.SIGINT, _set)
    previous_term = signal.signal(signal.SIGTERM, _set)
    try:
        yield event
    finally:
        _restore(previous_int, previous_term)
