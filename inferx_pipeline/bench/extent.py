"""Extent: when a measure phase has issued enough, as MLPerf LoadGen decides it.

A point keeps issuing until it has sent its planned count AND its finished requests
span ``min_duration_s`` (first send to last finish: the window ``metrics.run_window_s``
reports as the result's ``duration``); then it stops issuing and drains what is in
flight. The span is taken over finished records only, so it never overstates: a point
that stops by it is long enough by construction, unless a stop signal cuts it short.

Past the planned count, a whole round of failures in a row (as many as the
concurrency) ends the extension: a dead or failing server has nothing left to measure,
and hammering it for the rest of the minimum would only fill the result with errors.
"""

from __future__ import annotations

from inferx_pipeline.bench.records import NS_PER_S, RequestRecord


class Extent:
    """Counts what a measure phase issued and keeps the records it finished."""

    def __init__(self, planned: int, min_duration_s: float = 0.0, round_size: int = 1) -> None:
        self.planned = planned
        self.min_duration_s = min_duration_s
        self.round_size = max(1, round_size)
        self.issued = 0
        self.records: list[RequestRecord] = []
        self._first_ns: int | None = None
        self._last_ns = 0
        self._failed_in_a_row = 0

    @property
    def window_s(self) -> float:
        """Seconds from the first send to the last finish over the records so far."""
        return 0.0 if self._first_ns is None else (self._last_ns - self._first_ns) / NS_PER_S

    @property
    def failing(self) -> bool:
        """Whether the last round of requests all failed."""
        return self._failed_in_a_row >= self.round_size

    def wants_more(self) -> bool:
        """Whether to issue another item: the planned count or the minimum not yet reached."""
        if self.issued < self.planned:
            return True
        return self.window_s < self.min_duration_s and not self.failing

    def issue(self) -> None:
        """Count one item (request or session) as issued."""
        self.issued += 1

    def add(self, record: RequestRecord) -> None:
        """Keep a finished request's record."""
        self.records.append(record)
        if record.start_ns:
            first = self._first_ns
            self._first_ns = record.start_ns if first is None else min(first, record.start_ns)
            self._last_ns = max(self._last_ns, record.end_ns)
        self._failed_in_a_row = 0 if record.ok else self._failed_in_a_row + 1
