"""Leaderboard policy read from ``catalog/leaderboard.yaml``: tiers, baseline, regression rule."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from inferx_pipeline.catalog import read_model
from inferx_pipeline.results.record import Scenario
from inferx_pipeline.strict import FrozenModel

Stat = Literal["mean", "median", "p90", "p99"]
STATS: tuple[Stat, ...] = ("mean", "median", "p90", "p99")
# Interactivity axes (tok/s/user): 1000 / TPOT ms, and InferenceX's agentic north star,
# E2E-normalized interactivity (1 / statistic of E2EL per output token).
Axis = Literal["intvty", "e2e_intvty"]
AXES: tuple[Axis, ...] = ("intvty", "e2e_intvty")
Direction = Literal["higher", "lower"]


class RegressionPolicy(FrozenModel):
    """How far a value may stray from its own history before it counts as a regression."""

    k: float = Field(gt=0, description="Band half-width in robust standard deviations.")
    window: int = Field(ge=2, description="Accepted history values the band is computed from.")
    min_history: int = Field(ge=2, description="Values needed before a key is judged at all.")
    min_rel_spread: float = Field(ge=0, description="Floor on the band, fraction of |median|.")
    metrics: dict[str, Direction] = Field(description="Metric column -> which way is better.")


class SitePolicy(FrozenModel):
    """Presentation limits and the attribution printed on every download."""

    max_scatter_points: int = Field(gt=0, description="Non-front points drawn per model page.")
    attribution: str


class TierSet(FrozenModel):
    """Interactivity tiers of one workload kind and the one the overview ranks at."""

    tiers: tuple[float, ...] = Field(min_length=1, description="Interactivity tiers, tok/s/user.")
    headline_tier: float
    source: str = Field(description="Why these tiers fit the workload kind's range.")

    @model_validator(mode="after")
    def _headline_is_a_tier(self) -> TierSet:
        _check_headline(self.headline_tier, self.tiers)
        return self


def _check_headline(headline: float, tiers: tuple[float, ...]) -> None:
    if headline not in tiers:
        raise ValueError(f"headline_tier {headline} is not one of tiers {list(tiers)}")


class LeaderboardConfig(FrozenModel):
    """Everything in ``catalog/leaderboard.yaml``."""

    source: str
    tiers: tuple[float, ...] = Field(min_length=1, description="Interactivity tiers, tok/s/user.")
    headline_tier: float
    scenario_tiers: dict[Scenario, TierSet] = Field(
        default_factory=dict,
        description="Scenario (workload kind) -> its own tiers; others use `tiers`.",
    )
    baseline_sku: str
    price_tier: str
    default_stat: Stat
    regression: RegressionPolicy
    site: SitePolicy

    @model_validator(mode="after")
    def _headline_is_a_tier(self) -> LeaderboardConfig:
        _check_headline(self.headline_tier, self.tiers)
        return self

    def tier_set(self, scenario: str) -> TierSet:
        """The tiers of workloads of ``scenario``: its own entry, else the default tiers."""
        for kind, found in self.scenario_tiers.items():
            if kind == scenario:
                return found
        return TierSet(tiers=self.tiers, headline_tier=self.headline_tier, source=self.source)

    def tiers_for(self, scenario: str) -> tuple[float, ...]:
        """The interactivity tiers (tok/s/user) of workloads of ``scenario``."""
        return self.tier_set(scenario).tiers

    def headline_for(self, scenario: str) -> float:
        """The tier (tok/s/user) the overview ranks workloads of ``scenario`` at."""
        return self.tier_set(scenario).headline_tier


def load_leaderboard_config(catalog_dir: Path) -> LeaderboardConfig:
    """Read ``catalog_dir/leaderboard.yaml``; CatalogError naming the file on any problem."""
    return read_model(catalog_dir / "leaderboard.yaml", LeaderboardConfig, "leaderboard policy")
