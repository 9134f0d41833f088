"""Single-turn datasets: random prompts and prefix repetition, seeded and exact-length.

Each spec is a pydantic variant told apart by ``kind``; ``plan`` turns it into the
requests one shard of the run sends. The same seed always gives the same requests,
whatever the number of shards (shard k keeps every P-th request). Requests past the
planned count (a point extended to its minimum duration) each come from their own seed
stream, named by their index: deterministic, and not the planned prompts again.
"""

from __future__ import annotations

import itertools
import random
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from pydantic import Field

from inferx_pipeline.bench.client import Request
from inferx_pipeline.bench.load import FlatPlan
from inferx_pipeline.bench.prompts import lengths, random_text, seeded
from inferx_pipeline.bench.records import RequestRecord
from inferx_pipeline.bench.result import AgenticSummary, DatasetInfo
from inferx_pipeline.strict import StrictModel
from inferx_pipeline.tokens import Tokenizer

T = TypeVar("T")


@dataclass(frozen=True)
class Shard:
    """This process's share of the run: requests with ``i % count == index``."""

    index: int = 0
    count: int = 1

    def take(self, items: list[T]) -> list[T]:
        """Every ``count``-th item starting at ``index``."""
        return items[self.index :: self.count]

    def owns(self, position: int) -> bool:
        """Whether the item at ``position`` of the whole run is this shard's."""
        return position % self.count == self.index


@dataclass(frozen=True)
class Draw:
    """How many requests to draw and from which seed."""

    num_prompts: int
    warmup: int
    seed: int


class _FlatSpec(StrictModel):
    """A dataset of independent requests; subclasses say how to draw ``n`` of them."""

    @abstractmethod
    def _requests(self, draw: Draw, n: int, scope: str, tokenizer: Tokenizer) -> list[Request]:
        """``n`` requests drawn from the named seed stream ``scope``."""

    @abstractmethod
    def _extra(self, draw: Draw, tokenizer: Tokenizer) -> Callable[[int], Request]:
        """The request at an ``index`` past the planned ones, from its own seed stream."""

    def plan(self, draw: Draw, tokenizer: Tokenizer, shard: Shard) -> FlatPlan:
        """This shard's warmup and measured requests, and its extra ones, drawn lazily."""
        warm = self._requests(draw, draw.warmup, "warmup", tokenizer)
        measured = self._requests(draw, draw.num_prompts, "prompts", tokenizer)
        request = self._extra(draw, tokenizer)
        extra = (request(i) for i in itertools.count(draw.num_prompts) if shard.owns(i))
        return FlatPlan(shard.take(warm), shard.take(measured), extra)

    def summary(
        self, records: Sequence[RequestRecord], min_samples: Mapping[str, int]
    ) -> tuple[AgenticSummary | None, list[str]]:
        """Single-turn datasets have no session block."""
        return None, []


class RandomSpec(_FlatSpec):
    """Random token prompts of exact input length; outputs forced to length (ignore_eos)."""

    kind: Literal["random"] = "random"
    input_len: int = Field(default=1024, gt=0, description="Prompt tokens (nominal).")
    output_len: int = Field(default=1024, gt=0, description="Output tokens (nominal).")
    range_ratio: float = Field(
        default=0.0, ge=0, lt=1, description="Lengths uniform in nominal x [1-r, 1+r]."
    )

    def _requests(self, draw: Draw, n: int, scope: str, tokenizer: Tokenizer) -> list[Request]:
        rng = seeded(draw.seed, scope)
        ins = lengths(rng, self.input_len, self.range_ratio, n)
        outs = lengths(rng, self.output_len, self.range_ratio, n)
        return [
            self._request(rng, i, isl, osl, tokenizer)
            for i, (isl, osl) in enumerate(zip(ins, outs, strict=True))
        ]

    def _request(
        self, rng: random.Random, index: int, isl: int, osl: int, tokenizer: Tokenizer
    ) -> Request:
        text, count = random_text(rng, isl, tokenizer)
        return Request(index=index, prompt=text, prompt_len=count, max_tokens=osl)

    def _extra(self, draw: Draw, tokenizer: Tokenizer) -> Callable[[int], Request]:
        def request(index: int) -> Request:
            rng = seeded(draw.seed, "prompts", index)
            (isl,) = lengths(rng, self.input_len, self.range_ratio, 1)
            (osl,) = lengths(rng, self.output_len, self.range_ratio, 1)
            return self._request(rng, index, isl, osl, tokenizer)

        return request

    def info(self, draw: Draw) -> DatasetInfo:
        """The provenance block of the result."""
        return DatasetInfo(
            kind=self.kind,
            input_len=self.input_len,
            output_len=self.output_len,
            range_ratio=self.range_ratio,
            seed=draw.seed,
            num_prompts=draw.num_prompts,
            warmup=draw.warmup,
        )


class PrefixRepetitionSpec(_FlatSpec):
    """Prompts sharing one of ``num_prefixes`` prefixes, each with a random suffix."""

    kind: Literal["prefix-repetition"] = "prefix-repetition"
    prefix_len: int = Field(default=512, gt=0, description="Shared prefix tokens.")
    suffix_len: int = Field(default=512, gt=0, description="Unique suffix tokens.")
    num_prefixes: int = Field(default=8, gt=0, description="Distinct prefixes.")
    output_len: int = Field(default=128, gt=0, description="Output tokens.")

    def _requests(self, draw: Draw, n: int, scope: str, tokenizer: Tokenizer) -> list[Request]:
        rng = seeded(draw.seed, scope)
        prefixes = self._prefixes(rng, tokenizer)
        order = [i % self.num_prefixes for i in range(n)]
        rng.shuffle(order)
        return [self._request(rng, i, prefixes[which], tokenizer) for i, which in enumerate(order)]

    def _prefixes(self, rng: random.Random, tokenizer: Tokenizer) -> list[tuple[str, int]]:
        return [random_text(rng, self.prefix_len, tokenizer) for _ in range(self.num_prefixes)]

    def _request(
        self, rng: random.Random, index: int, prefix: tuple[str, int], tokenizer: Tokenizer
    ) -> Request:
        suffix, suffix_count = random_text(rng, self.suffix_len, tokenizer)
        return Request(
            index=index,
            prompt=f"{prefix[0]} {suffix}",
            prompt_len=prefix[1] + suffix_count,
            max_tokens=self.output_len,
        )

    def _extra(self, draw: Draw, tokenizer: Tokenizer) -> Callable[[int], Request]:
        # The measured requests' prefixes (drawn first from their stream): extra requests
        # share them as the planned ones do, with suffixes of their own.
        prefixes = self._prefixes(seeded(draw.seed, "prompts"), tokenizer)

        def request(index: int) -> Request:
            rng = seeded(draw.seed, "prompts", index)
            return self._request(rng, index, rng.choice(prefixes), tokenizer)

        return request

    def info(self, draw: Draw) -> DatasetInfo:
        """The provenance block of the result."""
        return DatasetInfo(
            kind=self.kind,
            input_len=self.prefix_len + self.suffix_len,
            output_len=self.output_len,
            prefix_len=self.prefix_len,
            num_prefixes=self.num_prefixes,
            seed=draw.seed,
            num_prompts=draw.num_prompts,
            warmup=draw.warmup,
        )
