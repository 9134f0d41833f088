"""Continuous batching, shaped like vLLM V1's scheduler.

Each step: running sequences first (decodes, k+1 positions each with speculation, and
unfinished prefill chunks) within ``max_num_batched_tokens``; when a sequence cannot get
the KV blocks it needs, the newest running sequence is preempted (recompute: its KV is
freed and it goes back to the head of the queue). Then, if nothing was preempted,
waiting requests are admitted in arrival order while the batch has room in sequences,
token budget and KV blocks; a long prompt is prefilled in chunks over several steps.

A request whose prompt KV arrived from a prefill worker (disaggregated decode) is
submitted with ``computed`` already at its prompt length: admission allocates blocks for
the whole prompt with an empty query, and its first token comes out of that one step.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from inferx_pipeline.sim.roofline import StepLoad, attn_pairs

BLOCK_TOKENS = 16


@dataclass(slots=True, eq=False)
class SimRequest:
    """One sequence's progress; token counts only, the text lives at the HTTP edge."""

    request_id: str
    prompt_tokens: int
    max_tokens: int
    generated: int = 0
    computed: int = 0  # tokens of the (re)prefill whose KV exists (received KV counts)
    prefill_len: int = 0  # prompt (+ generated after a preemption) to prefill before decoding
    blocks: int = 0
    finished: bool = False

    def __post_init__(self) -> None:
        self.prefill_len = self.prompt_tokens

    @property
    def prefilling(self) -> bool:
        """True until the (re)prefill has computed every token's KV."""
        return self.computed < self.prefill_len


@dataclass(frozen=True, slots=True)
class Scheduled:
    """One sequence's share of a step: ``query`` new tokens, a prefill chunk or a decode."""

    request: SimRequest
    query: int
    prefill: bool


@dataclass(frozen=True, slots=True)
class StepPlan:
    """What the next step runs, and the load it puts on the roofline."""

    entries: tuple[Scheduled, ...]
    load: StepLoad


@dataclass(frozen=True, slots=True)
class Emission:
    """Tokens one sequence produced in a step; ``accepted`` is A for a verify step."""

    request: SimRequest
    tokens: int
    first: bool
    finished: bool
    drafted: bool
    accepted: int


@dataclass(slots=True)
class Scheduler:
    """Admission within max-num-seqs and KV blocks, chunked prefill under a token budget."""

    max_num_seqs: int
    max_num_batched_tokens: int
    kv_capacity_tokens: int
    draft_tokens: int = 0
    waiting: deque[SimRequest] = field(default_factory=deque)
    running: list[SimRequest] = field(default_factory=list)
    used_blocks: int = 0
    preemptions: int = 0
    prefill_computed: int = 0  # prefill tokens this scheduler's steps computed, cumulative

    @property
    def total_blocks(self) -> int:
        """KV-cache blocks of ``BLOCK_TOKENS`` tokens."""
        return self.kv_capacity_tokens // BLOCK_TOKENS

    @property
    def kv_usage(self) -> float:
        """Fraction of KV blocks in use, 0..1."""
        return self.used_blocks / self.total_blocks if self.total_blocks else 0.0

    @property
    def idle(self) -> bool:
        """True when no request is queued or running."""
        return not self.waiting and not self.running

    def add(self, request: SimRequest) -> None:
        """Queue a request (FIFO)."""
        self.waiting.append(request)

    def abort(self, request: SimRequest) -> None:
        """Drop a request wherever it is (client went away) and free its KV blocks."""
        if request in self.running:
            self.running.remove(request)
        elif request in self.waiting:
            self.waiting.remove(request)
        self._free(request)
        request.finished = True

    def schedule(self) -> StepPlan:
        """Choose the next step's sequences; an empty plan means there is nothing to run."""
        budget = self.max_num_batched_tokens
        entries: list[Scheduled] = []
        preempted = self._schedule_running(entries, budget)
        budget -= sum(e.query for e in entries)
        if not preempted:
            self._admit(entries, budget)
        return StepPlan(tuple(entries), _load(entries, self.draft_tokens))

    def complete(self, plan: StepPlan, draw: Callable[[], int]) -> list[Emission]:
        """Apply a finished step: advance prefills, emit tokens (``draw`` gives A), retire."""
        emissions: list[Emission] = []
        for entry in plan.entries:
            req = entry.request
            if req.finished:  # aborted while the step ran
                continue
            if entry.prefill:
                req.computed += entry.query
                self.prefill_computed += entry.query
                if req.prefilling:
                    continue
                emissions.append(self._emit(req, 1, drafted=False, accepted=0))
            else:
                accepted = draw() if self.draft_tokens else 0
                emissions.append(
                    self._emit(req, accepted + 1, drafted=self.draft_tokens > 0, accepted=accepted)
                )
        return emissions

    def _emit(self, req: SimRequest, wanted: int, drafted: bool, accepted: int) -> Emission:
        tokens = min(wanted, req.max_tokens - req.generated)
        first = req.generated == 0
        req.generated += tokens
        if req.generated >= req.max_tokens:
            self.running.remove(req)
            self._free(req)
            req.finished = True
        return Emission(req, tokens, first, req.finished, drafted, accepted)

    def _schedule_running(self, entries: list[Scheduled], budget: int) -> bool:
        """Schedule running sequences in order; True if one had to be preempted."""
        preempted = False
        index = 0
        while index < len(self.running):
            req = self.running[index]
            if req.prefilling:
                query = min(req.prefill_len - req.computed, budget)
                need = req.computed + query
            else:
                query = 1 + self.draft_tokens
                need = req.prompt_tokens + req.generated + self.draft_tokens
            if query <= 0 or query > budget:
                index += 1
                continue
            while not self._allocate(req, need):
                preempted = True
                victim = self.running.pop()
                self._preempt(victim)
                if victim is req:
                    return preempted
            entries.append(Scheduled(req, query, req.prefilling))
            budget -= query
            index += 1
        return preempted

    def _admit(self, entries: list[Scheduled], budget: int) -> None:
        while self.waiting and len(self.running) < self.max_num_seqs and budget > 0:
            req = self.waiting[0]
            query = min(req.prefill_len - req.computed, budget)
            if not self._allocate(req, req.computed + query):
                return
            self.waiting.popleft()
            self.running.append(req)
            entries.append(Scheduled(req, query, prefill=True))
            budget -= query

    def _allocate(self, req: SimRequest, tokens: int) -> bool:
        needed = math.ceil(tokens / BLOCK_TOKENS) - req.blocks
        if needed <= 0:
            return True
        if self.used_blocks + needed > self.total_blocks:
            return False
        req.blocks += needed
        self.used_blocks += needed
        return True

    def _free(self, req: SimRequest) -> None:
        self.used_blocks -= req.blocks
        req.blocks = 0

    def _preempt(self, req: SimRequest) -> None:
        self._free(req)
        req.computed = 0
        req.prefill_len = req.prompt_tokens + req.generated
        self.preemptions += 1
        self.waiting.appendleft(req)


def _load(entries: list[Scheduled], draft_tokens: int) -> StepLoad:
    tokens = kv_tokens = drafting = 0
    pairs = 0.0
    for entry in entries:
        req = entry.request
        before = req.computed if entry.prefill else req.prompt_tokens + req.generated - 1
        tokens += entry.query
        kv_tokens += before + entry.query
        pairs += attn_pairs(before, entry.query)
        drafting += 0 if entry.prefill else 1
    return StepLoad(tokens, kv_tokens, pairs, drafting if draft_tokens else 0)
