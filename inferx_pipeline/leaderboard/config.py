"""Leaderboard policy read from ``catalog/leaderboard.yaml``: tiers, baseline, regression rule."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from inferx_pipeline.catalog import read_model
from inferx_pipeline.strict import FrozenModel

Stat = Literal["mean", "median", "p90", "p99"]
STATS: tuple[Stat, ...] = ("mean", "median", "p90", "p99")
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


class LeaderboardConfig(FrozenModel):
    """Everything in ``catalog/leaderboard.yaml``."""

    source: str
    tiers: tuple[float, ...] = Field(min_length=1, description="Interactivity tiers, tok/s/user.")
    headline_tier: float
    baseline_sku: str
    price_tier: str
    default_stat: Stat
    regression: RegressionPolicy
    site: SitePolicy

    @model_validator(mode="after")
    def _headline_is_a_tier(self) -> LeaderboardConfig:
        if self.headline_tier not in self.tiers:
            raise ValueError(
                f"headline_tier {self.headline_tier} is not one of tiers {list(self.tiers)}"
            )
        return self


def load_leaderboard_config(catalog_dir: Path) -> LeaderboardConfig:
    """Read ``catalog_dir/leaderboard.yaml``; CatalogError naming the file on any problem."""
    return read_model(catalog_dir / "leaderboard.yaml", LeaderboardConfig, "leaderboard policy")
