"""The one pydantic model configuration every boundary model shares."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """Unknown keys are errors; kebab-case aliases accepted where a model declares them."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_default=True)


class FrozenModel(StrictModel):
    """An identity: immutable and hashable (BenchmarkJob, ServerSpec, catalog entries)."""

    model_config = ConfigDict(
        extra="forbid", populate_by_name=True, validate_default=True, frozen=True
    )
