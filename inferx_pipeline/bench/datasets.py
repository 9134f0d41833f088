"""Single-turn datasets: random prompts and prefix repetition, seeded and exact-length.

Each spec is a pydantic variant told apart by ``kind``; ``plan`` turns it into the
requests one shard of the run sends. The same seed always gives the same requests,
whatever the number of shards (shard k keeps every P-th request).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
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

    def plan(self, draw: Draw, tokenizer: Tokenizer, shard: Shard) -> FlatPlan:
        """This shard's warmup and measured requests."""
        warm = self._requests(draw, draw.warmup, "warmup", tokenizer)
        measured = self._requests(draw, draw.num_prompts, "prompts", tokenizer)
        return FlatPlan(shard.take(warm), shard.take(measured))

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
        out = []
        for i, (isl, osl) in enumerate(zip(ins, outs, strict=True)):
            text, count = random_text(rng, isl, tokenizer)
            out.append(Request(index=i, prompt=text, prompt_len=count, max_tokens=osl))
        return out

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
        prefixes = [random_text(rng, self.prefix_len, tokenizer) for _ in range(self.num_prefixes)]
        order = [i % self.num_prefixes for i in range(n)]
        rng.shuffle(order)
        out = []
        for i, which in enumerate(order):
            prefix, prefix_count = prefixes[which]
            suffix, suffix_count = random_text(rng, self.suffix_len, tokenizer)
            out.append(
                Request(
                    index=i,
                    prompt=f"{prefix} {suffix}",
                    prompt_len=prefix_count + suffix_count,
                    max_tokens=self.output_len,
                )
            )
        return out

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
