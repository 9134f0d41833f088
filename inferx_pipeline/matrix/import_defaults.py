"""What the InferenceX import adds that master configs do not carry: speculative chains.

Data: ``catalog/inferencex-import.yaml`` (from InferenceX's perf-changelog.yaml, each chain
with the changelog entries that state it). InferenceX passes its speculative flags from
bash launch scripts; an imported recipe gets them as ``speculative`` keys, so the argv
our adapter renders is the one InferenceX runs (and SGLang's parser accepts it).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Self

from pydantic import Field, model_validator

from inferx_pipeline.catalog import read_model
from inferx_pipeline.strict import FrozenModel

IMPORT_FILE = "inferencex-import.yaml"


class SpeculativeChain(FrozenModel):
    """The speculative flags one of InferenceX's launch scripts passes, and their source."""

    draft_tokens: int | None = Field(
        default=None,
        ge=1,
        le=16,
        description="Recipe draft-tokens (SGLang --speculative-num-steps).",
    )
    topk: int | None = Field(
        default=None, ge=1, description="Recipe topk (SGLang --speculative-eagle-topk)."
    )
    verify_tokens: int | None = Field(
        default=None,
        ge=1,
        description="Recipe verify-tokens (SGLang --speculative-num-draft-tokens).",
    )
    source: str = Field(min_length=1, description="perf-changelog.yaml entries (PRs) stating it.")

    @model_validator(mode="after")
    def _one_path(self) -> Self:
        # One drafted path verifies each drafted token plus the bonus token.
        draft, verify = self.draft_tokens, self.verify_tokens
        if self.topk == 1 and draft is not None and verify is not None and verify != draft + 1:
            raise ValueError(
                f"verify_tokens: got {verify}; expected draft_tokens + 1 = {draft + 1} with topk 1"
            )
        return self

    def fields(self, stated: int | None) -> dict[str, int]:
        """The recipe's ``speculative`` keys (kebab-case) of this chain.

        ``stated`` is the draft length the entry's rows state themselves (DECODE_MTP_SIZE);
        it wins over the chain's, and verify-tokens then follows as ``stated + 1`` with
        topk 1 and is left to the engine otherwise.
        """
        draft, verify = self.draft_tokens, self.verify_tokens
        if stated is not None:
            draft, verify = stated, stated + 1 if self.topk == 1 else None
        keys = {"draft-tokens": draft, "topk": self.topk, "verify-tokens": verify}
        return {key: value for key, value in keys.items() if value is not None}


class ImportDefaults(FrozenModel):
    """Speculative chains by framework and model family, and per config where one differs."""

    source: str
    families: dict[str, dict[str, SpeculativeChain]] = Field(
        description="framework -> model-prefix -> chain."
    )
    configs: dict[str, SpeculativeChain] = Field(
        default_factory=dict, description="config key -> chain; wins over families."
    )

    def chain(self, key: str, framework: str, model_prefix: str) -> SpeculativeChain | None:
        """The chain of config ``key``, or None where InferenceX states none (engine default)."""
        if key in self.configs:
            return self.configs[key]
        return self.families.get(framework, {}).get(model_prefix)


def load_import_defaults(catalog_dir: Path) -> ImportDefaults:
    """Read ``catalog_dir/inferencex-import.yaml``; CatalogError naming the file if invalid."""
    return read_model(catalog_dir / IMPORT_FILE, ImportDefaults, "InferenceX import defaults")


@functools.cache
def cached_import_defaults(catalog_dir: Path) -> ImportDefaults:
    """``load_import_defaults`` memoized per directory."""
    return load_import_defaults(catalog_dir)
