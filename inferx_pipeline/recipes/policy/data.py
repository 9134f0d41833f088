"""Policy data: the lists and numbers the pre-GPU rules read, typed.

Three catalog files (each entry with a source): ``version-gates.yaml`` (engine-version
gates and per-repository tag patterns), ``image-facts.yaml`` (image ref -> Python and
engine version) and ``policy.yaml`` (client Python range, golden-AL knobs, vendor KV
offload rules, per-SKU agentic MTP grids, memory-fit settings).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, ValidationError, field_validator

from inferx_pipeline.catalog import YAML_LOADER
from inferx_pipeline.errors import CatalogError
from inferx_pipeline.strict import FrozenModel


class TagPattern(FrozenModel):
    """How to read an engine version out of one repository's image tags."""

    repository: str
    pattern: str = Field(description="Regex with a named group `version`, matched at the tag.")

    @field_validator("pattern")
    @classmethod
    def _has_version_group(cls, value: str) -> str:
        if "version" not in re.compile(value).groupindex:
            raise ValueError("pattern needs a named group (?P<version>...)")
        return value


class GateWhen(FrozenModel):
    """A gate applies when any of these holds for the recipe."""

    acceptance: Literal["synthetic", "real"] | None = None
    env_any: tuple[str, ...] = ()
    args_any: tuple[str, ...] = ()


class VersionGate(FrozenModel):
    """A feature that needs at least ``min_version`` of ``framework``."""

    name: str
    framework: str
    min_version: str
    when: GateWhen
    reason: str
    source: str


class ImageFact(FrozenModel):
    """What is known about one image reference."""

    python: str | None = Field(default=None, description="python3 --version inside it.")
    engine_version: str | None = Field(default=None, description="Engine version inside it.")
    source: str


class ClientPython(FrozenModel):
    min: str
    below: str
    source: str


class GoldenAlOnly(FrozenModel):
    env: tuple[str, ...]
    arg_substrings: tuple[str, ...]
    source: str


class VendorKvOffload(FrozenModel):
    forbidden_backends: tuple[str, ...]
    source: str


class AgenticMtp(FrozenModel):
    min_draft_tokens: int = Field(ge=1)
    max_conc: int = Field(ge=1)
    source: str


class MemoryFit(FrozenModel):
    warn_margin: float = Field(ge=0, lt=1)
    agentic_context_tokens: int = Field(gt=0)
    agentic_context_source: str
    default_gpu_memory_utilization: dict[str, float]
    default_source: str


class PolicyData(FrozenModel):
    """Everything the policy rules read, from the three catalog files."""

    tag_patterns: tuple[TagPattern, ...]
    gates: tuple[VersionGate, ...]
    images: dict[str, ImageFact]
    client_python: ClientPython
    golden_al_only: GoldenAlOnly
    vendor_kv_offload: dict[str, VendorKvOffload]
    agentic_mtp: dict[str, AgenticMtp]
    memory_fit: MemoryFit


def _read(path: Path) -> dict[str, object]:
    try:
        data = yaml.load(path.read_text(), Loader=YAML_LOADER)
    except (OSError, yaml.YAMLError) as err:
        raise CatalogError(f"{path}: cannot read policy data: {err}") from err
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: expected a mapping at the top level")
    return data


def load_policy(catalog_dir: Path) -> PolicyData:
    """Read the policy data files of ``catalog_dir``; CatalogError naming the file if wrong."""
    merged: dict[str, object] = {}
    for name in ("version-gates.yaml", "image-facts.yaml", "policy.yaml"):
        merged.update(_read(catalog_dir / name))
    try:
        return PolicyData.model_validate(merged)
    except ValidationError as err:
        raise CatalogError(f"{catalog_dir}: invalid policy data:\n{err}") from err


@functools.cache
def cached_policy(catalog_dir: Path) -> PolicyData:
    """``load_policy`` memoized per directory."""
    return load_policy(catalog_dir)
