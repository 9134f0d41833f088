"""The engine core: scheduler + roofline + acceptance draws, stepped by a driver.

The core keeps no clock. The real-time driver (``engine.py``) sleeps each step's
duration to an absolute deadline; ``predict.py`` adds it to a virtual clock. Both run
exactly this code, so predictions and served behaviour cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.sim.config import SimConfig
from inferx_pipeline.sim.deployment import Deployment, build_deployment, resolve_max_model_len
from inferx_pipeline.sim.efficiency import load_efficiency
from inferx_pipeline.sim.roofline import StepCost, StepLoad, step_cost
from inferx_pipeline.sim.scheduler import Emission, Scheduler, SimRequest
from inferx_pipeline.sim.speculative import AcceptanceSampler


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """One executed step: its load, simulated duration and the tokens it produced."""

    duration_s: float
    load: StepLoad
    cost: StepCost
    emissions: list[Emission]


@dataclass(slots=True)
class SpecCounters:
    """Speculative-decoding totals counted as vLLM does: AL = 1 + accepted / drafts."""

    drafts: int = 0
    draft_tokens: int = 0
    accepted_tokens: int = 0


class EngineCore:
    """Steps a continuous batch; ``step()`` returns None when nothing is queued or running."""

    def __init__(self, config: SimConfig, deployment: Deployment, max_model_len: int) -> None:
        self.config = config
        self.deployment = deployment
        self.max_model_len = max_model_len
        self.scheduler = Scheduler(
            max_num_seqs=config.max_num_seqs,
            max_num_batched_tokens=config.max_num_batched_tokens,
            kv_capacity_tokens=deployment.kv_capacity_tokens,
            draft_tokens=config.draft_tokens,
        )
        self.spec = SpecCounters()
        self._sampler = (
            AcceptanceSampler(config.acceptance_length, config.draft_tokens, config.seed)
            if config.acceptance_length is not None and config.draft_tokens
            else None
        )

    def step(self) -> StepOutcome | None:
        """Schedule, price and apply one step (durations are unscaled simulated seconds)."""
        plan = self.scheduler.schedule()
        if not plan.entries:
            return None
        cost = self.price(plan.load)
        emissions = self.scheduler.complete(plan, self._draw)
        for emission in emissions:
            if emission.drafted:
                self.spec.drafts += 1
                self.spec.draft_tokens += self.config.draft_tokens
                self.spec.accepted_tokens += emission.accepted
        return StepOutcome(cost.total_s, plan.load, cost, emissions)

    def price(self, load: StepLoad) -> StepCost:
        """The roofline cost of ``load`` on this deployment."""
        return step_cost(self.deployment, load, self.config.draft_tokens)

    def submit(self, request: SimRequest) -> None:
        """Queue a request already checked against ``max_model_len``."""
        self.scheduler.add(request)

    def _draw(self) -> int:
        return self._sampler.draw() if self._sampler is not None else 0


def build_core(config: SimConfig) -> EngineCore:
    """An engine core for ``config`` from its catalog; CatalogError / SimError when impossible."""
    catalog = cached_catalog(config.catalog_dir)
    efficiency = load_efficiency(config.catalog_dir).lookup(config.engine, config.sku)
    deployment = build_deployment(config, catalog, efficiency)
    return EngineCore(config, deployment, resolve_max_model_len(config, deployment))
