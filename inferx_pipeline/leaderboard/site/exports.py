"""CSV and JSON downloads, each opening with the attribution so a copied file keeps it."""

from __future__ import annotations

import io
import math
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd

_PLAIN = frozenset({str, int, bool})


def attribution_lines(attribution: str, generated_at: datetime) -> list[str]:
    """The header lines every download starts with (without comment markers)."""
    return [
        attribution.strip(),
        f"generated_at: {generated_at.isoformat()}",
        "rows with official=false are simulated or unofficial runs",
    ]


def to_csv(frame: pd.DataFrame, attribution: str, generated_at: datetime) -> str:
    """CSV text: ``# ``-prefixed attribution lines, then a header row and the data."""
    buffer = io.StringIO()
    for line in attribution_lines(attribution, generated_at):
        buffer.write(f"# {line}\n")
    frame.to_csv(buffer, index=False, lineterminator="\n", date_format="%Y-%m-%dT%H:%M:%SZ")
    return buffer.getvalue()


def jsonable(value: object) -> Any:
    """A value JSON can hold: NaN/NaT -> None, numpy scalars -> Python, times -> ISO 8601."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, pd.Timestamp | datetime):
        return None if pd.isna(value) else value.isoformat()
    if isinstance(value, float) and math.isnan(value):
        return None
    if value is None or value is pd.NaT or value is pd.NA:
        return None
    return value


def json_column(series: pd.Series) -> list[Any]:
    """A column as JSON-ready values (see ``jsonable``), converting floats without a call
    per value: pages and downloads hold tens of thousands of numbers."""
    if series.dtype.kind == "f":
        return [None if v != v else v for v in series.tolist()]  # v != v: NaN
    if series.dtype.kind in "iub" and not series.hasnans:  # nullable Int64 holds pd.NA
        native: list[Any] = series.tolist()
        return native
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype) and len(dtype.categories) <= len(series):
        # Each category converted once; code -1 (missing) is the appended None. (A few
        # rows of a column with thousands of categories take the per-value path below.)
        categories = [jsonable(v) for v in series.cat.categories.tolist()]
        categories.append(None)
        return [categories[code] for code in series.cat.codes.tolist()]
    # Strings, ints and bools are JSON as they are: one type test instead of jsonable's.
    return [v if type(v) in _PLAIN else jsonable(v) for v in series.tolist()]


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts."""
    columns = {str(name): json_column(frame[name]) for name in frame.columns}
    return [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]


def to_json(frame: pd.DataFrame, attribution: str, generated_at: datetime) -> str:
    """JSON text: ``{"attribution", "generated_at", "notes", "columns", "rows"}``."""
    head = attribution_lines(attribution, generated_at)
    document = {
        "attribution": head[0],
        "generated_at": generated_at.isoformat(),
        "notes": head[2:],
        "columns": list(frame.columns),
        "rows": records(frame),
    }
    return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode()


def write_downloads(
    out_dir: Path, name: str, frame: pd.DataFrame, attribution: str, generated_at: datetime
) -> list[Path]:
    """Write ``<name>.csv`` and ``<name>.json`` under ``out_dir``; returns both paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path, json_path = out_dir / f"{name}.csv", out_dir / f"{name}.json"
    csv_path.write_text(to_csv(frame, attribution, generated_at))
    json_path.write_text(to_json(frame, attribution, generated_at))
    return [csv_path, json_path]
