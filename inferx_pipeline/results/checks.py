"""Sanity checks on raw artifacts before they become rows: pure, raising with a reason.

Each check raises ``MalformedArtifactError`` with one of the ``REASONS`` codes, so
ingest can quarantine the file and say why. Unit checks compare two quantities the
file reports independently (tokens / duration vs throughput, 1000 / TPOT vs
interactivity): a value written in the wrong unit disagrees by about 1000x.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from inferx_pipeline.errors import MalformedArtifactError

# code -> what it means; the quarantine table stores the code and a sentence.
REASONS: dict[str, str] = {
    "unreadable": "the file could not be read",
    "truncated-json": "the file is not complete JSON",
    "not-an-object": "the JSON document is not an object",
    "unknown-format": "the keys match none of the known result formats",
    "missing-keys": "required keys are absent or null",
    "wrong-type": "a value has the wrong JSON type",
    "not-finite": "a number is NaN or infinite",
    "negative": "a throughput, latency, duration or count is negative",
    "wrong-units": "two related values disagree by a unit factor",
    "unsupported": "a valid file of a kind this importer does not map",
    "missing-identity": "the job identity is incomplete (pass identity flags)",
    "duplicate-artifact": "the same artifact appears twice in one ingest",
    "conflict": "another artifact already holds this result id",
    "damaged-manifest": "a sweep's attempt manifest is torn or unreadable",
    "damaged-artifact": "a sweep artifact is missing or its bytes do not match its hash",
}

# Relative tolerance of the unit cross-checks: generous for rounding, far below 1000x.
UNIT_TOLERANCE = 0.10


def reject(code: str, message: str) -> MalformedArtifactError:
    """The error for reason ``code`` (one of ``REASONS``)."""
    if code not in REASONS:
        raise ValueError(f"unknown rejection code {code!r}")
    return MalformedArtifactError(code, message)


def require_keys(raw: Mapping[str, Any], keys: Iterable[str]) -> None:
    """Raise ``missing-keys`` naming every key of ``keys`` absent or null in ``raw``."""
    missing = [key for key in keys if raw.get(key) is None]
    if missing:
        raise reject("missing-keys", f"missing required keys: {', '.join(missing)}")


def number(raw: Mapping[str, Any], key: str) -> float | None:
    """``raw[key]`` as a finite float (None when absent or null).

    Raises ``wrong-type`` for a non-number (booleans included) and ``not-finite``
    for NaN or infinity.
    """
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise reject("wrong-type", f"{key}: got {value!r}; expected a number")
    if not math.isfinite(value):
        raise reject("not-finite", f"{key}: got {value}; expected a finite number")
    return float(value)


def non_negative(raw: Mapping[str, Any], keys: Iterable[str]) -> None:
    """Raise ``negative`` for the first key of ``keys`` whose number is below zero."""
    for key in keys:
        value = number(raw, key)
        if value is not None and value < 0:
            raise reject("negative", f"{key}: got {value}; expected >= 0")


def all_finite(raw: Mapping[str, Any]) -> None:
    """Raise ``not-finite`` for any top-level NaN/infinite number in ``raw``."""
    for key, value in raw.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise reject("not-finite", f"{key}: got {value}; expected a finite number")


def agree(name: str, reported: float, derived: float, derivation: str) -> None:
    """Raise ``wrong-units`` when ``reported`` and ``derived`` differ by more than tolerance."""
    if reported == 0 and derived == 0:
        return
    scale = max(abs(reported), abs(derived))
    if abs(reported - derived) > UNIT_TOLERANCE * scale:
        raise reject(
            "wrong-units",
            f"{name}: got {reported:g}, but {derivation} gives {derived:g} "
            f"({reported / derived if derived else math.inf:.3g}x); "
            "one of them is in the wrong unit",
        )
