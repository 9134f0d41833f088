"""The event loop a run (and each of its shard processes) measures on.

``run_loop`` picks uvloop when installed; ``on_first_sigint`` makes the first Ctrl-C a
graceful stop; ``arm_deadline`` stops the run after its time budget.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from inferx_pipeline.bench.load import StopSignal

T = TypeVar("T")


def arm_deadline(stop: StopSignal, deadline_s: float | None) -> asyncio.TimerHandle | None:
    """Fire ``stop`` with reason ``deadline`` after ``deadline_s`` seconds."""
    if deadline_s is None:
        return None
    return asyncio.get_running_loop().call_later(deadline_s, stop.stop, "deadline")


def on_first_sigint(stop: StopSignal) -> Callable[[], None]:
    """Make the first Ctrl-C stop the run gracefully; the second one interrupts.

    Returns the undo. A no-op away from the main thread (signals cannot be caught there).
    """
    loop = asyncio.get_running_loop()

    def handle() -> None:
        stop.stop("interrupted")
        loop.remove_signal_handler(signal.SIGINT)

    try:
        loop.add_signal_handler(signal.SIGINT, handle)
    except (ValueError, RuntimeError, NotImplementedError):
        return lambda: None

    def undo() -> None:
        loop.remove_signal_handler(signal.SIGINT)

    return undo


def run_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on uvloop when installed, else asyncio's default loop."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)
