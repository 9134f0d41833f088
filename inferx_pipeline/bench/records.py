"""RequestRecord: what the client measured for one request, in absolute nanoseconds.

Timestamps come from ``time.perf_counter_ns`` (CLOCK_MONOTONIC on Linux, shared by
every process on the machine), so records from sharded processes merge directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

NS_PER_S = 1_000_000_000


@dataclass(slots=True)
class RequestRecord:
    """One request: intended lengths, chunk arrival times, usage, and the error if any.

    ``chunk_ns`` holds the arrival time of every SSE message with a non-empty
    ``choices`` (vllm bench serve's token chunks); the usage-only chunk is not one.
    """

    index: int
    prompt_len: int
    max_tokens: int
    start_ns: int = 0
    chunk_ns: list[int] = field(default_factory=list)
    end_ns: int = 0
    output_tokens: int = 0
    prompt_tokens: int | None = None
    text: str = ""
    error: str = ""
    session_id: str | None = None
    turn: int | None = None

    @property
    def ok(self) -> bool:
        """Succeeded: no error and at least one token chunk."""
        return not self.error and bool(self.chunk_ns)

    @property
    def ttft_s(self) -> float:
        """Seconds from send to the first token chunk."""
        return (self.chunk_ns[0] - self.start_ns) / NS_PER_S

    @property
    def e2el_s(self) -> float:
        """Seconds from send to the last token chunk."""
        return (self.chunk_ns[-1] - self.start_ns) / NS_PER_S

    @property
    def itls_s(self) -> list[float]:
        """Seconds between consecutive token chunks."""
        c = self.chunk_ns
        return [(c[i] - c[i - 1]) / NS_PER_S for i in range(1, len(c))]

    @property
    def tpot_s(self) -> float | None:
        """(E2EL - TTFT) / (output tokens - 1); None with fewer than two output tokens.

        Also None when every chunk arrived in one socket read (one timestamp): the client
        could not time the decode steps, and 0 would read as infinite interactivity.
        """
        if self.output_tokens < 2 or self.chunk_ns[-1] == self.chunk_ns[0]:
            return None
        return (self.chunk_ns[-1] - self.chunk_ns[0]) / NS_PER_S / (self.output_tokens - 1)
