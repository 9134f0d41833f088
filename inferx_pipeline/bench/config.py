"""BenchConfig: everything one benchmark run needs, as one validated model."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, model_validator

from inferx_pipeline.bench.agentic import AgenticSpec
from inferx_pipeline.bench.client import Api
from inferx_pipeline.bench.datasets import Draw, PrefixRepetitionSpec, RandomSpec, Shard
from inferx_pipeline.bench.load import LoadShape
from inferx_pipeline.bench.result import MetadataValue
from inferx_pipeline.strict import StrictModel

DatasetSpec = Annotated[
    RandomSpec | PrefixRepetitionSpec | AgenticSpec, Field(discriminator="kind")
]
PROMPTS_PER_CONC = 10  # InferenceX's multiplier: num_prompts = concurrency x 10


class BenchConfig(StrictModel):
    """One load point against one OpenAI-compatible endpoint."""

    endpoint: str = Field(description="Base URL, e.g. http://127.0.0.1:8000 (with or without /v1).")
    model: str = Field(description="Model name the server serves (the request's `model`).")
    api: Api = Field(
        default="completions", description="chat (/v1/chat/completions) or completions."
    )
    dataset: DatasetSpec = Field(default_factory=RandomSpec)
    concurrency: int = Field(default=1, ge=1, description="Most requests (sessions) in flight.")
    num_prompts: int | None = Field(
        default=None,
        ge=1,
        description="Measured requests (sessions) at least; default concurrency x 10.",
    )
    prompts_per_conc: int = Field(default=PROMPTS_PER_CONC, ge=1)
    warmup: int = Field(default=0, ge=0, description="Requests sent first and not measured.")
    request_rate: float = Field(
        default=math.inf, gt=0, description="Poisson arrivals per second; inf = closed loop."
    )
    burstiness: float = Field(
        default=1.0, gt=0, description="Gamma shape of arrivals; 1 = Poisson."
    )
    min_duration_s: float = Field(
        default=0.0,
        ge=0,
        description="Keep issuing requests (sessions) until this many seconds passed as well "
        "as num_prompts were sent, then drain (MLPerf LoadGen's rule); 0 = num_prompts only.",
    )
    deadline_s: float | None = Field(
        default=None, gt=0, description="Stop the whole run after this many seconds."
    )
    seed: int = Field(default=0, description="Same seed, same requests.")
    chat_template_kwargs: dict[str, Any] = Field(default_factory=dict)
    processes: int = Field(default=1, ge=1, description="Client processes sharing the load.")
    tokenizer: Path | None = Field(
        default=None, description="Local tokenizer.json; default built-in."
    )
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)
    validity_file: Path | None = Field(
        default=None, description="Validity rules YAML; default catalog/bench-validity.yaml."
    )
    idle_timeout_s: float | None = Field(
        default=None,
        gt=0,
        description="No byte for this long fails a request, s; default from the catalog.",
    )
    total_timeout_s: float | None = Field(
        default=None,
        gt=0,
        description="A request longer than this fails, s; default from the catalog.",
    )
    scrape_metrics: bool = Field(default=True, description="Read /metrics before and after.")

    @model_validator(mode="after")
    def _shards_fit(self) -> BenchConfig:
        if self.processes > self.concurrency:
            raise ValueError(
                f"processes={self.processes} exceeds concurrency={self.concurrency}; "
                f"each process needs at least one request in flight"
            )
        return self

    @property
    def total_prompts(self) -> int:
        """Planned measured requests (sessions for agentic): the least a run sends."""
        return self.num_prompts or self.concurrency * self.prompts_per_conc

    def draw(self) -> Draw:
        """How many requests to draw and from which seed."""
        return Draw(num_prompts=self.total_prompts, warmup=self.warmup, seed=self.seed)

    def shape(self, shard: Shard) -> LoadShape:
        """This shard's share of concurrency and rate (shares differ by at most one)."""
        base, extra = divmod(self.concurrency, shard.count)
        return LoadShape(
            concurrency=base + (1 if shard.index < extra else 0),
            request_rate=self.request_rate / shard.count,
            burstiness=self.burstiness,
            seed=self.seed * 1000 + shard.index,
            min_duration_s=self.min_duration_s,
        )
