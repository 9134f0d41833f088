"""SIGTERM and SIGINT inside a sweep block, whoever held them before; the signal event."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from types import FrameType

import pytest

from inferx_pipeline.sweep.signals import interrupt_event, terminate_as_interrupt


class Foreign(BaseException):
    """What a caller's own handler raises (Dagster's run worker raises its own error)."""


def _foreign(signum: int, frame: FrameType | None) -> None:
    raise Foreign


@pytest.fixture
def held() -> Iterator[None]:
    """SIGINT ignored (a background job's) and SIGTERM raising ``Foreign``, then put back."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN), signal.signal(signal.SIGTERM, _foreign)
    yield
    signal.signal(signal.SIGINT, before[0])
    signal.signal(signal.SIGTERM, before[1])


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["term", "int"])
def test_either_signal_interrupts_the_block_then_the_old_handlers_return(
    signum: signal.Signals, held: None
) -> None:
    with pytest.raises(KeyboardInterrupt), terminate_as_interrupt():
        signal.raise_signal(signum)
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    assert signal.getsignal(signal.SIGTERM) is _foreign


def test_the_event_records_signals_without_interrupting(held: None) -> None:
    with interrupt_event() as stop:
        assert not stop.is_set()
        signal.raise_signal(signal.SIGTERM)
        signal.raise_signal(signal.SIGINT)
        assert stop.is_set()
    assert signal.getsignal(signal.SIGTERM) is _foreign
