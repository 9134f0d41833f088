"""Completing a job identity for files that carry only part of it.

A RawResult from our sweep runner carries its identity in ``metadata``; a vLLM bench
file carries the model and concurrency; an InferenceX agg row carries most of it.
What a file lacks comes from ``IdentityHints`` (the ``inferx results ingest`` flags,
which win over the file) and the catalog (vendor by SKU, family by HF id). Ids that
no foreign file has are derived deterministically: the same inputs give the same
recipe id, fingerprint and job id on every import.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from pydantic import Field, ValidationError

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.results.checks import reject
from inferx_pipeline.results.record import JobIdentity, RunContext
from inferx_pipeline.strict import FrozenModel

IDENTITY_FIELDS: tuple[str, ...] = tuple(JobIdentity.model_fields)
# Fields that do not enter a derived fingerprint: it names the server, not the point.
_NOT_IN_FINGERPRINT = frozenset({"fingerprint", "job_id", "conc", "recipe_id"})
_DERIVED = frozenset({"recipe_id", "fingerprint", "job_id"})


class IdentityHints(FrozenModel):
    """Identity and run fields given by hand; None means "take it from the file"."""

    identity: dict[str, Any] = Field(
        default_factory=dict, description="JobIdentity fields, e.g. {'sku': 'h200', 'tp': 8}."
    )
    run_id: str | None = None
    attempt: int | None = Field(default=None, ge=1)
    simulated: bool | None = None
    official: bool | None = None


class ImportContext(FrozenModel):
    """What importers may look up: catalog facts and the hand-given hints."""

    vendors: dict[str, str] = Field(default_factory=dict, description="SKU key -> vendor.")
    families: dict[str, str] = Field(default_factory=dict, description="HF id -> family.")
    hints: IdentityHints = Field(default_factory=IdentityHints)

    @classmethod
    def from_catalog(cls, catalog: Catalog, hints: IdentityHints | None = None) -> ImportContext:
        """Vendor and family maps from ``catalog``."""
        families = {hf: family for family, arch in catalog.models.items() for hf in arch.hf_ids}
        vendors = {key: sku.vendor for key, sku in catalog.skus.items()}
        return cls(vendors=vendors, families=families, hints=hints or IdentityHints())


def resolve_identity(derived: Mapping[str, Any], context: ImportContext) -> JobIdentity:
    """A full ``JobIdentity`` from the file's fields, the hints and the catalog.

    Raises ``MalformedArtifactError`` (missing-identity) naming every field still
    unknown and the flag that supplies it.
    """
    fields = {k: v for k, v in derived.items() if v is not None}
    fields.update({k: v for k, v in context.hints.identity.items() if v is not None})
    if "model_family" not in fields and "model" in fields:
        _set(fields, "model_family", context.families.get(fields["model"]))
    if "vendor" not in fields and "sku" in fields:
        _set(fields, "vendor", context.vendors.get(fields["sku"]))
    _derive_ids(fields)
    missing = [name for name in _REQUIRED if name not in fields]
    # Derived ids are missing only because a base field is; name the base field.
    missing = [name for name in missing if name not in _DERIVED] or missing
    if missing:
        flags = ", ".join(f"--{name.replace('_', '-')}" for name in missing)
        raise reject("missing-identity", f"identity lacks {', '.join(missing)}; pass {flags}")
    try:
        return JobIdentity(**fields)
    except ValidationError as err:
        raise reject("wrong-type", f"identity does not validate: {err}") from err


def resolve_run(
    derived: Mapping[str, Any],
    context: ImportContext,
    *,
    artifact_sha256: str,
    default_official: bool,
) -> RunContext:
    """The run context: hints, then the file's fields, then an import id from the hash."""
    hints = context.hints
    try:
        return RunContext(
            run_id=hints.run_id or derived.get("run_id") or f"import-{artifact_sha256[:16]}",
            attempt=hints.attempt or derived.get("attempt") or 1,
            simulated=_first(hints.simulated, derived.get("simulated"), False),
            official=_first(hints.official, derived.get("official"), default_official),
        )
    except ValidationError as err:
        raise reject("wrong-type", f"run context does not validate: {err}") from err


def default_recipe_id(fields: Mapping[str, Any]) -> str:
    """``family-precision-sku-framework[-spec]``, the recipe naming scheme."""
    parts = [fields["model_family"], fields["precision"], fields["sku"], fields["framework"]]
    if fields.get("spec_method", "none") != "none":
        parts.append(fields["spec_method"])
    return "-".join(str(p) for p in parts)


_REQUIRED = tuple(name for name, info in JobIdentity.model_fields.items() if info.is_required())


def _derive_ids(fields: dict[str, Any]) -> None:
    needed = ("model_family", "precision", "sku", "framework")
    if "recipe_id" not in fields and all(k in fields for k in needed):
        fields["recipe_id"] = default_recipe_id(fields)
    if "fingerprint" not in fields and "recipe_id" in fields:
        server = {k: v for k, v in sorted(fields.items()) if k not in _NOT_IN_FINGERPRINT}
        canonical = json.dumps(server, sort_keys=True, separators=(",", ":"), default=str)
        fields["fingerprint"] = hashlib.sha256(canonical.encode()).hexdigest()
    if "job_id" not in fields and "recipe_id" in fields and "conc" in fields:
        fields["job_id"] = f"{fields['recipe_id']}/{fields['fingerprint'][:12]}/c{fields['conc']}"


def _set(fields: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        fields[key] = value


def _first(*values: Any) -> bool:
    return bool(next(v for v in values if v is not None))
