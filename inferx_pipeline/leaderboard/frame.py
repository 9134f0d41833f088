"""The leaderboard's view of result rows: which columns it reads and which rows count.

Every computation downstream takes the frame ``prepare`` returns: valid rows only, with two
derived labels (``workload``: scenario plus ISL/OSL or thinking mode, so 1k/1k and 8k/1k
never share a front; ``config``: the server knobs that tell points of one group apart).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from inferx_pipeline.errors import LeaderboardError

# The ResultRecord columns the leaderboard reads (a subset of the results contract).
IDENTITY_COLUMNS: tuple[str, ...] = (
    "recipe_id", "model", "model_family", "precision", "sku", "vendor", "framework",
    "image", "image_tag", "scenario", "isl", "osl", "tp", "ep", "pp", "pcp", "dp_attn",
    "kv_offload", "spec_method", "draft_tokens", "thinking", "gpus", "conc", "deployment",
)  # fmt: skip
MEASUREMENT_COLUMNS: tuple[str, ...] = (
    "tput_per_gpu", "input_tput_per_gpu", "output_tput_per_gpu",
    *(f"{m}_{s}_s" for m in ("ttft", "e2el") for s in ("mean", "median", "p90", "p99")),
    *(f"{axis}_{s}" for axis in ("intvty", "e2e_intvty") for s in ("mean", "median", "p90", "p99")),
)  # fmt: skip
PROVENANCE_COLUMNS: tuple[str, ...] = (
    "attempt", "started_at", "finished_at", "simulated", "official", "status", "valid",
)  # fmt: skip
# The result's own artifact: its row (``inferx results artifacts HASH``) names the others.
LINK_COLUMNS: tuple[str, ...] = ("artifact_sha256",)
LEADERBOARD_COLUMNS: tuple[str, ...] = (
    IDENTITY_COLUMNS + MEASUREMENT_COLUMNS + PROVENANCE_COLUMNS + LINK_COLUMNS
)
# What history and regressions read of every image's rows (plus the interactivity and
# metric columns the policy names, see ``history_columns``): a million rows of all
# LEADERBOARD_COLUMNS would cost twice the reading time and memory.
HISTORY_BASE_COLUMNS: tuple[str, ...] = (
    "recipe_id", "sku", "image_tag", "scenario", "isl", "osl", "thinking", "tp", "ep", "pp",
    "pcp", "dp_attn", "spec_method", "draft_tokens", "kv_offload", "conc", "deployment",
    "tput_per_gpu", "input_tput_per_gpu", "output_tput_per_gpu", "intvty_median",
    *PROVENANCE_COLUMNS,
)  # fmt: skip

# A Pareto front is drawn per group: the things a reader compares.
GROUP_KEYS: tuple[str, ...] = (
    "model", "workload", "sku", "framework", "precision", "spec_method",
)  # fmt: skip
# The page a group is drawn on.
PAGE_KEYS: tuple[str, ...] = ("model", "workload")


def require_columns(frame: pd.DataFrame, columns: tuple[str, ...] = LEADERBOARD_COLUMNS) -> None:
    """Raise LeaderboardError naming every missing ResultRecord column."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise LeaderboardError(
            f"result frame: missing columns {', '.join(missing)}; expected the ResultRecord "
            "columns (inferx_pipeline/results/record.py); read it with ResultStore.read_frame"
        )


def _size_label(tokens: pd.Series) -> pd.Series:
    # 1024 -> "1k", 8192 -> "8k", 1000 -> "1000": the names InferenceX readers know.
    values = tokens.astype("Int64")
    kilo = values % 1024 == 0
    return pd.Series(
        np.where(kilo, (values // 1024).astype(str) + "k", values.astype(str)), index=tokens.index
    )


def workload_labels(frame: pd.DataFrame) -> pd.Series:
    """``fixed-seq-len 1k/1k`` for fixed lengths, ``agentic-coding`` (+ thinking mode) else."""
    fixed = frame["isl"].notna() & frame["osl"].notna()
    lengths = pd.Series("", index=frame.index, dtype=object)
    if fixed.any():
        sub = frame.loc[fixed]
        lengths.loc[fixed] = " " + _size_label(sub["isl"]) + "/" + _size_label(sub["osl"])
    mode = frame["thinking"].astype(str)
    thinking = np.where(mode == "none", "", " thinking-" + mode)
    return frame["scenario"].astype(str) + lengths + thinking


def config_labels(frame: pd.DataFrame) -> pd.Series:
    """The server knobs of a point, e.g. ``tp8 ep8 dp-attn mtp3 kv:dram``; a multinode
    deployment's workers instead of the layout, e.g. ``disagg 1P tp4 + 2D tp8 mtp3``."""
    label = "tp" + frame["tp"].astype(str)
    label = label + np.where(frame["ep"].astype(int) > 1, " ep" + frame["ep"].astype(str), "")
    label = label + np.where(frame["pp"].astype(int) > 1, " pp" + frame["pp"].astype(str), "")
    label = label + np.where(frame["pcp"].astype(int) > 1, " pcp" + frame["pcp"].astype(str), "")
    label = label + np.where(frame["dp_attn"].astype(bool), " dp-attn", "")
    if "deployment" in frame.columns:
        deployment = frame["deployment"].astype(object)
        label = pd.Series(np.where(deployment.notna(), deployment.astype(str), label), frame.index)
    spec = frame["spec_method"].astype(str)
    label = label + np.where(spec != "none", " " + spec + frame["draft_tokens"].astype(str), "")
    offload = frame["kv_offload"].astype(str)
    return label + np.where(offload != "none", " kv:" + offload, "")


def badge_labels(frame: pd.DataFrame) -> pd.Series:
    """``""`` for an official real-GPU run, else ``simulated`` or ``unofficial``."""
    official = frame["official"].astype(bool)
    simulated = frame["simulated"].astype(bool)
    badge = np.where(official, "", np.where(simulated, "simulated", "unofficial"))
    return pd.Series(badge, index=frame.index)


def group_labels(frame: pd.DataFrame) -> pd.Series:
    """``h200 · vllm · fp8`` (+ `` · mtp``): how a group is named in legends and tables."""
    label = frame["sku"].astype(str) + " · " + frame["framework"].astype(str)
    label = label + " · " + frame["precision"].astype(str)
    spec = frame["spec_method"].astype(str)
    return label + np.where(spec != "none", " · " + spec, "")


def history_columns(extra: tuple[str, ...]) -> tuple[str, ...]:
    """``HISTORY_BASE_COLUMNS`` plus ``extra`` (the default statistic's interactivity and the
    regression metrics), without repeats."""
    return tuple(dict.fromkeys((*HISTORY_BASE_COLUMNS, *extra)))


def prepare(frame: pd.DataFrame, columns: tuple[str, ...] = LEADERBOARD_COLUMNS) -> pd.DataFrame:
    """Valid ``ok`` rows with positive throughput, plus ``workload``, ``config`` and ``badge``.

    Keeps ``columns`` (``LEADERBOARD_COLUMNS``, or ``history_columns(...)`` for the rows
    history and regressions read). Raises LeaderboardError when one is missing. Never
    mutates ``frame``.
    """
    require_columns(frame, columns)
    keep = (
        frame["valid"].astype(bool)
        & (frame["status"].astype(str) == "ok")
        & (frame["tput_per_gpu"] > 0)
        & (frame["intvty_median"] > 0)
    )
    # Copy-on-write: when every row is kept (a store read filters in SQL), the columns are
    # shared with ``frame``, not copied (a million rows: 140 MB less).
    kept = frame if keep.all() else frame.loc[keep]
    rows = kept[list(columns)].reset_index(drop=True)
    for derive, inputs in _DERIVED.items():
        rows[derive.__name__.removesuffix("_labels")] = _per_distinct(rows, inputs, derive)
    return rows


def _per_distinct(
    rows: pd.DataFrame, inputs: tuple[str, ...], derive: Callable[[pd.DataFrame], pd.Series]
) -> pd.Series:
    # Labels depend on a few low-cardinality columns: derive them once per distinct
    # combination and broadcast, instead of a million string concatenations.
    codes = rows.groupby(list(inputs), observed=True, sort=False, dropna=False).ngroup()
    distinct = rows.loc[~codes.duplicated(), list(inputs)]
    labels = derive(distinct).to_numpy()[np.argsort(codes[distinct.index].to_numpy())]
    return pd.Series(pd.Categorical.from_codes(*_codes(labels, codes.to_numpy())), index=rows.index)


def _codes(labels: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, list[str]]:
    categories, inverse = np.unique(labels.astype(str), return_inverse=True)
    return inverse[codes], list(categories)


_DERIVED: dict[Callable[[pd.DataFrame], pd.Series], tuple[str, ...]] = {
    workload_labels: ("scenario", "isl", "osl", "thinking"),
    config_labels: (
        "tp",
        "ep",
        "pp",
        "pcp",
        "dp_attn",
        "spec_method",
        "draft_tokens",
        "kv_offload",
        "deployment",
    ),
    badge_labels: ("official", "simulated"),
}


def newest_images(rows: pd.DataFrame) -> pd.DataFrame:
    """Per recipe, the ``recipe_id``, ``image_tag`` of its newest image: the one whose latest
    run finished last (an image without finish times counts as newest; ties go to the
    greater tag)."""
    image_end = rows.groupby(["recipe_id", "image_tag"], observed=True)["finished_at"].max()
    ordered = image_end.reset_index().sort_values(["finished_at", "image_tag"], kind="stable")
    newest = ordered.groupby("recipe_id", observed=True).tail(1)
    return newest[["recipe_id", "image_tag"]].reset_index(drop=True)


def current(rows: pd.DataFrame) -> pd.DataFrame:
    """Each recipe at its newest image: the rows the leaderboard (not history) shows.

    The newest image is ``newest_images``'s; within it a rerun of the same point (same
    config, workload and concurrency) keeps the newest attempt.
    """
    if rows.empty:
        return rows
    keyed = rows.merge(newest_images(rows), on=["recipe_id", "image_tag"])
    point = ["recipe_id", "workload", "config", "conc"]
    keyed = keyed.sort_values(["finished_at", "attempt"], kind="stable")
    return keyed.drop_duplicates(point, keep="last").reset_index(drop=True)
