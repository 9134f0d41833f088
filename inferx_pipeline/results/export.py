"""Records out: InferenceX's agg row format (so its dashboard can read ours), CSV, JSON.

The InferenceX row has the keys its ``process_result.py`` writes for a single-node
point (see ``importers/inferencex.py``); ``hw`` is our SKU key, ``dp_attention`` the
string ``"true"``/``"false"`` as InferenceX writes it, and null statistics are left
out rather than written as null. Agentic rows have no InferenceX agg shape and are
skipped by that format.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pandas as pd

from inferx_pipeline.results.normalize import METRICS, STATS

# InferenceX key -> record column (identity and throughput part of the row)
INFERENCEX_IDENTITY: dict[str, str] = {
    "hw": "sku",
    "conc": "conc",
    "image": "image",
    "model": "model",
    "infmax_model_prefix": "model_family",
    "framework": "framework",
    "precision": "precision",
    "spec_decoding": "spec_method",
    "isl": "isl",
    "osl": "osl",
    "tp": "tp",
    "ep": "ep",
    "tput_per_gpu": "tput_per_gpu",
    "output_tput_per_gpu": "output_tput_per_gpu",
    "input_tput_per_gpu": "input_tput_per_gpu",
}
# InferenceX key -> record column, seconds and tok/s/user
INFERENCEX_METRICS: dict[str, str] = {
    **{
        f"{raw}_{metric}": f"{metric}_{stat}_s" for metric in METRICS for stat, raw in STATS.items()
    },
    **{f"{raw}_intvty": f"intvty_{stat}" for stat, raw in STATS.items()},
}


def inferencex_rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """One InferenceX agg dict per fixed-seq-len row of ``frame`` (a ``read_frame`` result)."""
    fixed = frame[frame["scenario"] == "fixed-seq-len"]
    return [_inferencex_row(row) for row in fixed.to_dict(orient="records")]


def _inferencex_row(row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {key: _plain(row[col]) for key, col in INFERENCEX_IDENTITY.items()}
    out["disagg"] = bool(_plain(row.get("disagg")) or False)
    out["is_multinode"] = _plain(row.get("deployment")) is not None
    out["dp_attention"] = "true" if row["dp_attn"] else "false"
    for key, col in INFERENCEX_METRICS.items():
        value = _plain(row[col])
        if value is not None:
            out[key] = value
    return out


def _plain(value: Any) -> Any:
    # pandas hands back NaN / pd.NA for nulls and numpy scalars for numbers.
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return None
    return value.item() if hasattr(value, "item") else value


def to_inferencex(frame: pd.DataFrame) -> str:
    """JSON list of InferenceX agg rows (the shape of its collected ``agg_bmk.json``)."""
    return json.dumps(inferencex_rows(frame), indent=2)


def to_csv(frame: pd.DataFrame) -> str:
    """CSV with a header row, ISO-8601 UTC datetimes."""
    return str(frame.to_csv(index=False, date_format="%Y-%m-%dT%H:%M:%S.%fZ"))


def to_json(frame: pd.DataFrame) -> str:
    """JSON list of row objects, ISO-8601 datetimes, nulls as null."""
    return str(frame.to_json(orient="records", date_format="iso", indent=2))


# export format -> writer
EXPORTERS: dict[str, Callable[[pd.DataFrame], str]] = {
    "inferencex": to_inferencex,
    "csv": to_csv,
    "json": to_json,
}
