"""Policy data: the lists and numbers the pre-GPU rules read, typed.

Four catalog files (each entry with a source): ``version-gates.yaml`` (engine-version
gates and per-repository tag patterns), ``image-facts.yaml`` (image ref -> Python and
engine version), ``policy.yaml`` (client Python range, golden-AL knobs, vendor KV
offload rules, per-SKU agentic MTP grids, memory-fit settings) and ``gate.yaml`` (YAML
limits, secret names, and the engine facts the rules on the final server command read).
"""

from __future__ import annotations

import fnmatch
import functools
import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, ValidationError, field_validator

from inferx_pipeline.catalog import YAML_LOADER
from inferx_pipeline.errors import CatalogError
from inferx_pipeline.recipes.yamlsource import YamlLimits
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
    min_conc_step: int = Field(default=1, ge=1, description="Least gap between concurrencies.")
    source: str


class MemoryFit(FrozenModel):
    warn_margin: float = Field(ge=0, lt=1)
    agentic_context_tokens: int = Field(gt=0)
    agentic_context_source: str
    default_gpu_memory_utilization: dict[str, float]
    default_source: str


class Secrets(FrozenModel):
    """Names (and fnmatch patterns) whose values are secrets; compared case-insensitively."""

    names: tuple[str, ...]
    patterns: tuple[str, ...]
    source: str

    def is_secret(self, name: str) -> bool:
        """True when env name or flag ``name`` (``--hf-token`` reads as ``HF_TOKEN``) is secret."""
        return _secret_pattern(self.names, self.patterns).fullmatch(_secret_key(name)) is not None


def _secret_key(name: str) -> str:
    return name.lstrip("-").replace("-", "_").upper()


@functools.cache
def _secret_pattern(names: tuple[str, ...], patterns: tuple[str, ...]) -> re.Pattern[str]:
    # One regex for all names and globs: rules ask about every env name of every job.
    parts = [re.escape(n.upper()) for n in names]
    parts += [
        fnmatch.translate(p.upper()).removeprefix("(?s:").removesuffix(")\\Z") for p in patterns
    ]
    return re.compile("|".join(f"(?:{p})" for p in parts))


class AcceptanceKnobs(FrozenModel):
    """Where one engine reads a synthetic acceptance length from (its final argv/env)."""

    env: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    json_flags: tuple[str, ...] = ()
    json_keys: tuple[str, ...] = ()
    offset: float = Field(default=0.0, description="Engine number minus the golden AL.")
    source: str


class DraftKnobs(FrozenModel):
    """Where one engine reads a draft setting (length, method, checkpoint) from its argv."""

    flags: tuple[str, ...] = ()
    json_flags: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    source: str


class SyntheticRequired(FrozenModel):
    scenarios: tuple[str, ...]
    source: str


class Headroom(FrozenModel):
    max_utilization: dict[str, float]
    max_utilization_speculative: dict[str, float]
    draft_workspace_gb: float = Field(ge=0)
    draft_kv_layers: int = Field(ge=0)
    source: str


class SinceVersion(FrozenModel):
    since: str
    value: int = Field(ge=1)


class MaxNumSeqsDefaults(FrozenModel):
    engines: dict[str, tuple[SinceVersion, ...]] = Field(description="Newest entry first.")
    source: str


class LinearAttention(FrozenModel):
    layers: int = Field(ge=1)
    state_mb_per_layer: float = Field(gt=0, description="Per sequence, whole model width, MB.")
    source: str


class EngineKvOffload(FrozenModel):
    backends: tuple[str, ...]
    source: str


class KvOffloadFlags(FrozenModel):
    flags: tuple[str, ...]
    json_flags: tuple[str, ...]
    source: str


class PolicyData(FrozenModel):
    """Everything the policy rules read, from the four catalog files."""

    tag_patterns: tuple[TagPattern, ...]
    gates: tuple[VersionGate, ...]
    images: dict[str, ImageFact]
    client_python: ClientPython
    golden_al_only: GoldenAlOnly
    vendor_kv_offload: dict[str, VendorKvOffload]
    agentic_mtp: dict[str, AgenticMtp]
    memory_fit: MemoryFit
    yaml_limits: YamlLimits
    secrets: Secrets
    acceptance_knobs: dict[str, AcceptanceKnobs]
    draft_length_knobs: dict[str, DraftKnobs]
    draft_identity_knobs: dict[str, DraftKnobs]
    synthetic_required: SyntheticRequired
    curve_methods: dict[str, tuple[str, ...]]
    headroom: Headroom
    max_num_seqs_defaults: MaxNumSeqsDefaults
    linear_attention: dict[str, LinearAttention]
    engine_kv_offload: dict[str, EngineKvOffload]
    kv_offload_flags: KvOffloadFlags

    def default_max_num_seqs(self, framework: str, version: tuple[int, ...] | None) -> int | None:
        """The engine's own max-num-seqs at ``version`` (None = unknown: the newest entry)."""
        for entry in self.max_num_seqs_defaults.engines.get(framework, ()):
            since = tuple(int(p) for p in entry.since.split("."))
            if version is None or version >= since:
                return entry.value
        return None


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
    for name in ("version-gates.yaml", "image-facts.yaml", "policy.yaml", "gate.yaml"):
        merged.update(_read(catalog_dir / name))
    try:
        return PolicyData.model_validate(merged)
    except ValidationError as err:
        raise CatalogError(f"{catalog_dir}: invalid policy data:\n{err}") from err


@functools.cache
def cached_policy(catalog_dir: Path) -> PolicyData:
    """``load_policy`` memoized per directory."""
    return load_policy(catalog_dir)
