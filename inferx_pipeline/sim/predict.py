"""Predictions without HTTP: the engine core under a closed loop in virtual time.

Each of ``concurrency`` virtual clients sends a request of exactly ``isl`` prompt and
``osl`` output tokens and sends the next one the moment the previous finishes, like
``vllm bench serve --max-concurrency``. Arrivals happen only at step ends, so which
sequences run in which step does not depend on step durations: the loop records a
``Trace`` in step indices, and durations price it afterwards (``calibrate`` re-prices the
same trace under other efficiency constants).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate

from pydantic import Field

from inferx_pipeline.errors import SimError
from inferx_pipeline.sim.config import SimConfig
from inferx_pipeline.sim.core import EngineCore, build_core
from inferx_pipeline.sim.roofline import StepLoad
from inferx_pipeline.sim.scheduler import SimRequest
from inferx_pipeline.strict import FrozenModel

DEFAULT_PROMPTS_PER_CONC = 10


class PredictPoint(FrozenModel):
    """Predicted benchmark numbers at one concurrency (``vllm bench serve`` definitions)."""

    concurrency: int
    requests: int
    duration_s: float = Field(description="Virtual benchmark duration, seconds.")
    output_tput_per_gpu: float = Field(description="Output tokens/s per GPU.")
    total_tput_per_gpu: float = Field(description="Input + output tokens/s per GPU.")
    interactivity: float = Field(description="tok/s/user = 1000 / mean TPOT (ms).")
    mean_ttft_ms: float
    mean_tpot_ms: float
    mean_e2el_ms: float
    preemptions: int
    acceptance_length: float | None = Field(description="1 + accepted / drafts, if speculating.")


@dataclass(slots=True)
class Span:
    """One request in step indices: issued after ``issued`` steps, first/last token steps."""

    issued: int
    first: int = -1
    last: int = -1


@dataclass(slots=True)
class Trace:
    """A closed-loop run in step indices: each step's load and unscaled duration."""

    isl: int
    osl: int
    concurrency: int
    loads: list[StepLoad] = field(default_factory=list)
    durations: list[float] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)


def _step_limit(requests: int, isl: int, osl: int) -> int:
    # Every step advances at least one token of some request: a livelock guard, not a cap.
    return 4 * requests * (isl + osl) + 1_000


def closed_loop_trace(
    core: EngineCore, concurrency: int, requests: int, isl: int, osl: int
) -> Trace:
    """Run ``requests`` requests at ``concurrency`` through ``core``; SimError if stuck."""
    trace = Trace(isl, osl, concurrency)
    spans: dict[SimRequest, Span] = {}

    def issue() -> None:
        request = SimRequest(str(len(trace.spans)), isl, osl)
        spans[request] = Span(len(trace.loads))
        trace.spans.append(spans[request])
        core.submit(request)

    for _ in range(min(concurrency, requests)):
        issue()
    for step in range(_step_limit(requests, isl, osl)):
        outcome = core.step()
        if outcome is None:
            break
        trace.loads.append(outcome.load)
        trace.durations.append(outcome.duration_s)
        for emission in outcome.emissions:
            span = spans[emission.request]
            if emission.first:
                span.first = step
            if emission.finished:
                span.last = step
                del spans[emission.request]
                if len(trace.spans) < requests:
                    issue()
    if spans or len(trace.spans) < requests:
        raise SimError(f"prediction at concurrency {concurrency} did not finish; scheduler stuck")
    return trace


def step_ends(durations: Sequence[float]) -> list[float]:
    """End time of each step (seconds), with a leading 0.0 for "before the first step"."""
    return [0.0, *accumulate(durations)]


def summarize(trace: Trace, core: EngineCore) -> PredictPoint:
    """Benchmark numbers of a priced trace (durations in simulated seconds)."""
    ends = step_ends(trace.durations)
    n, osl, gpus = len(trace.spans), trace.osl, core.deployment.gpus
    ttft = sum(ends[s.first + 1] - ends[s.issued] for s in trace.spans) / n
    e2el = sum(ends[s.last + 1] - ends[s.issued] for s in trace.spans) / n
    tpot = sum(ends[s.last + 1] - ends[s.first + 1] for s in trace.spans) / n / max(osl - 1, 1)
    spec = core.spec
    return PredictPoint(
        concurrency=trace.concurrency,
        requests=n,
        duration_s=ends[-1],
        output_tput_per_gpu=n * osl / ends[-1] / gpus,
        total_tput_per_gpu=n * (trace.isl + osl) / ends[-1] / gpus,
        interactivity=1.0 / tpot if tpot > 0 else 0.0,
        mean_ttft_ms=1000.0 * ttft,
        mean_tpot_ms=1000.0 * tpot,
        mean_e2el_ms=1000.0 * e2el,
        preemptions=core.scheduler.preemptions,
        acceptance_length=1 + spec.accepted_tokens / spec.drafts if spec.drafts else None,
    )


def checked_core(config: SimConfig, isl: int, osl: int) -> EngineCore:
    """A fresh core for ``config``; SimError unless ``isl + osl`` fits its context."""
    if isl < 1 or osl < 1:
        raise SimError(f"isl and osl must be >= 1; got isl={isl}, osl={osl}")
    core = build_core(config)
    if isl + osl > core.max_model_len:
        raise SimError(
            f"isl + osl = {isl + osl} exceeds max_model_len {core.max_model_len}; "
            "lower them or raise --max-model-len"
        )
    return core


def predict(
    config: SimConfig, isl: int, osl: int, concurrencies: Sequence[int],
    prompts_per_conc: int = DEFAULT_PROMPTS_PER_CONC,
) -> list[PredictPoint]:  # fmt: skip
    """One point per concurrency, each from a fresh engine (no state carried over).

    Raises SimError when ``isl + osl`` exceeds the server's context or the deployment
    cannot run, CatalogError for unknown SKU/model/dtypes. Deterministic for a seed.
    """
    points = []
    for concurrency in concurrencies:
        core = checked_core(config, isl, osl)
        trace = closed_loop_trace(core, concurrency, concurrency * prompts_per_conc, isl, osl)
        points.append(summarize(trace, core))
    return points
