"""Agentic multi-turn replay: each session's turns in order, with think time between.

A turn's prompt is the whole conversation so far (shared prefix, earlier inputs and
the server's own earlier outputs) plus its new input, so the context grows as in a
real agent loop. Turn n+1 is sent no earlier than turn n finished plus its think
time; a failed turn ends its session (the context it needed does not exist). A point
extended to its minimum duration starts further sessions (ordinals past the planned
count, each seeded by its ordinal); a session in progress always finishes.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from inferx_pipeline.bench.agentic_stats import summarize_agentic
from inferx_pipeline.bench.client import Message, Request, Sender
from inferx_pipeline.bench.datasets import Draw, Shard
from inferx_pipeline.bench.extent import Extent
from inferx_pipeline.bench.load import LoadShape, StopSignal, offer, run_requests, sleep_until
from inferx_pipeline.bench.prompts import random_text, seeded
from inferx_pipeline.bench.records import NS_PER_S, RequestRecord
from inferx_pipeline.bench.result import AgenticSummary, DatasetInfo
from inferx_pipeline.bench.trace import TraceSession, load_trace
from inferx_pipeline.strict import StrictModel
from inferx_pipeline.tokens import Tokenizer


@dataclass(frozen=True)
class TurnPlan:
    """One turn's new input text and lengths."""

    text: str
    input_len: int
    output_len: int
    think_time_s: float


@dataclass(frozen=True)
class SessionPlan:
    """A session ready to replay; ``first_index`` numbers its turns' requests."""

    session_id: str
    prefix: str
    prefix_len: int
    turns: tuple[TurnPlan, ...]
    first_index: int

    async def replay(self, sender: Sender, keep: Callable[[RequestRecord], None]) -> None:
        """Send the turns in order, keeping each record; stop at the first failure."""
        messages: list[Message] = [{"role": "system", "content": self.prefix}]
        context_len = self.prefix_len
        ready_ns = time.perf_counter_ns()
        for n, turn in enumerate(self.turns, start=1):
            await sleep_until(ready_ns + int(turn.think_time_s * NS_PER_S))
            messages.append({"role": "user", "content": turn.text})
            context_len += turn.input_len
            record = await sender.send(
                Request(
                    index=self.first_index + n - 1,
                    prompt=tuple(messages),
                    prompt_len=context_len,
                    max_tokens=turn.output_len,
                    session_id=self.session_id,
                    turn=n,
                )
            )
            keep(record)
            if not record.ok:
                return
            messages.append({"role": "assistant", "content": record.text})
            context_len += record.output_tokens
            ready_ns = record.end_ns


@dataclass(frozen=True)
class AgenticPlan:
    """Sessions to replay, ``shape.concurrency`` at a time, after single-turn warmups;
    ``extra`` sessions (drawn lazily) while the shape's minimum duration needs them."""

    warmup_requests: tuple[Request, ...]
    sessions: tuple[SessionPlan, ...]
    extra: Iterable[SessionPlan] = ()

    @property
    def planned(self) -> int:
        """Turns to send at least, over the planned sessions."""
        return sum(len(s.turns) for s in self.sessions)

    async def warmup(self, sender: Sender, shape: LoadShape, stop: StopSignal) -> None:
        """Send first turns of extra sessions closed-loop; discard them."""
        closed = LoadShape(concurrency=shape.concurrency)
        warm = closed.extent(len(self.warmup_requests))
        await run_requests(self.warmup_requests, sender, closed, stop, warm)

    async def measure(self, sender: Sender, shape: LoadShape, stop: StopSignal) -> Extent:
        """Replay the sessions, then extra ones while needed; a rate, when set, is the
        session arrival rate. The extent counts sessions and keeps turn records."""
        extent = shape.extent(len(self.sessions))

        async def run(session: SessionPlan) -> None:
            await session.replay(sender, extent.add)

        await offer(itertools.chain(self.sessions, self.extra), run, shape, stop, extent)
        return extent


class AgenticSpec(StrictModel):
    """Replay a trace of sessions; ``num_prompts`` counts sessions (the trace cycles)."""

    kind: Literal["agentic"] = "agentic"
    trace: str = Field(
        default="agentic-coding-small", description="Shipped trace name or JSONL path."
    )
    think_time_scale: float = Field(
        default=1.0, ge=0, description="Multiplier on think times (0 = back to back)."
    )
    max_turns: int | None = Field(default=None, gt=0, description="Cut sessions at this turn.")

    def _session(
        self,
        source: TraceSession,
        ordinal: int,
        draw: Draw,
        tokenizer: Tokenizer,
        prefixes: dict[str, tuple[str, int]],
        first_index: int,
    ) -> SessionPlan:
        if source.prefix_id not in prefixes:
            rng = seeded(draw.seed, "prefix", source.prefix_id)
            prefixes[source.prefix_id] = random_text(rng, source.prefix_len, tokenizer)
        prefix, prefix_len = prefixes[source.prefix_id]
        rng = seeded(draw.seed, "session", ordinal)
        turns = []
        for turn in source.turns[: self.max_turns]:
            text, count = random_text(rng, turn.input_len, tokenizer)
            think = turn.think_time_s * self.think_time_scale
            turns.append(TurnPlan(text, count, turn.output_len, think))
        return SessionPlan(
            session_id=f"{source.session_id}#{ordinal}",
            prefix=prefix,
            prefix_len=prefix_len,
            turns=tuple(turns),
            first_index=first_index,
        )

    def _extra(
        self,
        trace: Sequence[TraceSession],
        draw: Draw,
        tokenizer: Tokenizer,
        prefixes: dict[str, tuple[str, int]],
        shard: Shard,
        index: int,
    ) -> Iterator[SessionPlan]:
        """This shard's sessions past the planned ones, numbered on from ``index``."""
        for ordinal in itertools.count(draw.num_prompts):
            source = trace[ordinal % len(trace)]
            if shard.owns(ordinal):
                yield self._session(source, ordinal, draw, tokenizer, prefixes, index)
            index += len(source.turns[: self.max_turns])

    def plan(self, draw: Draw, tokenizer: Tokenizer, shard: Shard) -> AgenticPlan:
        """This shard's sessions (every P-th) and warmup first turns; extra sessions lazily."""
        trace = load_trace(self.trace)
        prefixes: dict[str, tuple[str, int]] = {}
        sessions, index = [], 0
        for ordinal in range(draw.num_prompts):
            session = self._session(
                trace[ordinal % len(trace)], ordinal, draw, tokenizer, prefixes, index
            )
            sessions.append(session)
            index += len(session.turns)
        extra = self._extra(trace, draw, tokenizer, prefixes, shard, index)
        warm = [
            self._session(trace[i % len(trace)], -1 - i, draw, tokenizer, prefixes, 0)
            for i in range(draw.warmup)
        ]
        warm_requests = [
            Request(
                index=i,
                prompt=(
                    {"role": "system", "content": s.prefix},
                    {"role": "user", "content": s.turns[0].text},
                ),
                prompt_len=s.prefix_len + s.turns[0].input_len,
                max_tokens=s.turns[0].output_len,
            )
            for i, s in enumerate(warm)
        ]
        return AgenticPlan(tuple(shard.take(warm_requests)), tuple(shard.take(sessions)), extra)

    def summary(
        self, records: Sequence[RequestRecord], min_samples: Mapping[str, int]
    ) -> tuple[AgenticSummary | None, list[str]]:
        """Per-turn and per-session statistics, and keys left null for few samples."""
        return summarize_agentic(records, min_samples)

    def info(self, draw: Draw) -> DatasetInfo:
        """The provenance block of the result."""
        return DatasetInfo(
            kind=self.kind,
            trace=self.trace,
            seed=draw.seed,
            num_prompts=draw.num_prompts,
            warmup=draw.warmup,
        )
