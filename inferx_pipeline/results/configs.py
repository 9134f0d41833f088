"""The configuration identity that links an eval score to the throughput rows it judges.

An eval server always verifies drafts for real and runs at the eval protocol's context
length, so an eval job's fingerprint differs from its throughput twin's, which may accept
drafts synthetically at the golden acceptance length and sizes its context to the
workload. ``config_id`` hashes what both share: the recipe (which stands for its engine
args and env), the model, SKU, engine and image, the parallel layout, KV offload,
speculative decoding method and draft length, and the thinking mode. Left out: the
acceptance mode and golden AL, the workload lengths (the context the server is sized
to), concurrency and the job's own ids. The fields are ``JobIdentity`` names, so the
identity is derivable from a stored throughput row, a sweep's metadata or an imported
artifact alike; the image digest is matched beside it, not hashed into it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from inferx_pipeline.results import checks

# Field -> (its type, the value an absent field means: JobIdentity's default); REQUIRED
# fields have no default.
REQUIRED = object()
CONFIG_FIELDS: dict[str, tuple[Callable[[Any], object], object]] = {
    "recipe_id": (str, REQUIRED),
    "model": (str, REQUIRED),
    "precision": (str, REQUIRED),
    "sku": (str, REQUIRED),
    "framework": (str, REQUIRED),
    "image": (str, REQUIRED),
    "scenario": (str, REQUIRED),
    "tp": (int, REQUIRED),
    "ep": (int, 1),
    "pp": (int, 1),
    "pcp": (int, 1),
    "dp_attn": (bool, False),
    "kv_offload": (str, "none"),
    "kv_offload_backend": (str, ""),
    "spec_method": (str, "none"),
    "draft_tokens": (int, 0),
    "thinking": (str, "none"),
    "deployment": (str, ""),
}
# Fields added after config ids were stored (eval scores keep theirs): hashed only when
# set, so every single-node configuration keeps the id it had.
HASHED_WHEN_SET = frozenset({"deployment"})


def config_id(fields: Mapping[str, Any]) -> str:
    """sha256 hex of the configuration ``fields`` name (``JobIdentity`` names; others
    ignored). Absent or null optional fields count as their defaults, so a sweep's
    metadata (nulls dropped) and a stored row agree (pure).

    Raises ``MalformedArtifactError`` (missing-identity) naming each required field absent.
    """
    missing = [
        k for k, (_, default) in CONFIG_FIELDS.items() if default is REQUIRED and _absent(fields, k)
    ]
    if missing:
        raise checks.reject("missing-identity", f"configuration lacks {', '.join(missing)}")
    # Rows read from a database carry numpy scalars and categoricals: hash plain values of
    # one type per field, so one configuration hashes the same from every source.
    canonical = {
        name: kind(default if _absent(fields, name) else fields[name])
        for name, (kind, default) in CONFIG_FIELDS.items()
        if name not in HASHED_WHEN_SET or not _absent(fields, name)
    }
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def frame_config_ids(frame: pd.DataFrame) -> pd.Series:
    """``config_id`` of each row of ``frame`` (every ``CONFIG_FIELDS`` column present or
    defaulted), hashed once per distinct configuration (pure)."""
    names = [name for name in CONFIG_FIELDS if name in frame.columns]
    keys = frame[names].astype(object).where(frame[names].notna(), None)
    distinct = keys.drop_duplicates()
    ids = {
        tuple(row): config_id(dict(zip(names, row, strict=True)))
        for row in distinct.itertuples(index=False, name=None)
    }
    return pd.Series(
        [ids[tuple(row)] for row in keys.itertuples(index=False, name=None)],
        index=frame.index,
        dtype=object,
    )


def _absent(fields: Mapping[str, Any], name: str) -> bool:
    value = fields.get(name)
    return value is None or bool(pd.isna(value))
