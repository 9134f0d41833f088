"""The Markdown report of one pull request's unofficial run, fit for a PR comment (pure).

::

    ### inferx unofficial run 3f2a… — PR #12 @ 1a2b3c4
    Label `sweep-full` · canary `dsr1-…-conc4`: ok · jobs: 11 ok, 1 failed
    View unofficial run (performance): https://…/unofficial/3f2a…/
    View unofficial run (accuracy): https://…/unofficial/3f2a…/accuracy.html
    Baseline, per concurrency table, tier table.

Numbers are the stored rows' (``compare.RunComparison``), printed with fixed decimals
after scaling (``FORMATS``): throughput 1 decimal (tok/s/GPU), interactivity 1 decimal
(tok/s/user), TTFT 1 decimal and TPOT 2 decimals in milliseconds, percentages 1 decimal;
rounding is Python's ``format`` of ``float(value) x scale`` (a negative value that rounds to
zero prints as zero). A
compared cell reads ``baseline → PR (Δ, Δ%)``; Δ is PR minus baseline, computed from the
unrounded values. Each point names its PR row by the first 12 characters of its
``result_id`` (``inferx results artifacts <id>`` finds it).

The report stays within GitHub's comment limit (``COMMENT_LIMIT``, counted in UTF-8 bytes,
so in characters too): the per-point table is cut with a note saying how many points are
left out, the tier table never (four tiers per recipe and workload). A run whose gate
failed gets its findings instead of tables.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import Field

from inferx_pipeline.leaderboard.compare import (
    METRICS,
    Metric,
    PointComparison,
    PointState,
    RunComparison,
    TierComparison,
    TierSide,
)
from inferx_pipeline.strict import FrozenModel

COMMENT_LIMIT = 65_536  # GitHub's maximum issue comment body
# Left for the truncation note (and a margin) when the point table is cut.
_NOTE_RESERVE = 400
# metric -> (column header, scale, decimals): the printed value is value x scale.
FORMATS: dict[Metric, tuple[str, float, int]] = {
    "tput_per_gpu": ("tok/s/GPU", 1.0, 1),
    "output_tput_per_gpu": ("output tok/s/GPU", 1.0, 1),
    "intvty": ("tok/s/user", 1.0, 1),
    "ttft_s": ("TTFT ms", 1000.0, 1),
    "tpot_s": ("TPOT ms", 1000.0, 2),
}
PCT_DECIMALS = 1
TIER_DECIMALS = 1  # tok/s/GPU at a tier
STATE_WORDS: dict[PointState, str] = {
    "compared": "compared", "no_baseline": "no baseline", "failed": "failed",
    "invalid": "invalid",
}  # fmt: skip
_TIER_WORDS = {"not_reached": "not reached", "below_range": "below range"}
_TICKS = re.compile(r"`+")


class RunSummary(FrozenModel):
    """What the caller knows of the run that the result rows do not."""

    pr_number: int = Field(ge=1)
    head_sha: str = Field(min_length=1)
    run_id: str | None = Field(description="The sweep's run id; None when none started.")
    label: str | None = Field(default=None, description="The PR's primary sweep label.")
    canary: str | None = Field(default=None, description="The canary job id, if any.")
    canary_status: str | None = Field(default=None, description="How the canary job ended.")
    job_counts: dict[str, int] = Field(default_factory=dict, description="Jobs per status.")
    performance_url: str | None = Field(default=None, description="The run's site page.")
    accuracy_url: str | None = Field(default=None, description="The run's accuracy page.")
    gate_findings: tuple[str, ...] = Field(
        default=(), description="The pre-GPU gate's findings; non-empty: the gate failed."
    )
    stopped: str | None = Field(
        default=None, description="Why the run was stopped before every job ended, if it was."
    )
    baseline_note: str | None = Field(
        default=None, description="What the PR's 'Baseline recipe:' line named, and found."
    )


def fixed(value: float | None, scale: float = 1.0, decimals: int = 1, sign: bool = False) -> str:
    """``value x scale`` with ``decimals`` decimals (``+`` on positives with ``sign``);
    ``-`` for None. A value that rounds to zero prints as ``0.0`` (or ``+0.0``)."""
    if value is None:
        return "-"
    # Python's float formatting rounds correctly (numpy's round does not, so never it).
    text = f"{float(value) * scale:.{decimals}f}"
    if text.startswith("-") and not text.strip("-0."):
        text = text[1:]  # a negative value that rounds to zero
    return f"+{text}" if sign and not text.startswith("-") else text


def metric_header(metric: Metric, stat: str) -> str:
    """A point table header: the unit, with the statistic where one applies."""
    header = FORMATS[metric][0]
    return header if metric in ("tput_per_gpu", "output_tput_per_gpu") else f"{header} ({stat})"


def cell(metric: Metric, point: PointComparison) -> str:
    """One metric of one point: ``baseline → PR (Δ, Δ%)`` when compared, the PR value
    alone without a baseline, ``-`` for a failed or invalid point."""
    _, scale, decimals = FORMATS[metric]
    if point.state in ("failed", "invalid"):
        return "-"
    pr = fixed(point.pr.value(metric), scale, decimals)
    found = point.changes.get(metric)
    if found is None or point.baseline is None:
        return pr
    base = fixed(found.baseline, scale, decimals)
    delta = fixed(found.delta, scale, decimals, sign=True)
    pct = f", {fixed(found.pct, 1.0, PCT_DECIMALS, sign=True)}%" if found.pct is not None else ""
    return f"{base} → {pr} ({delta}{pct})"


def markdown_report(comparison: RunComparison | None, run: RunSummary) -> str:
    """The report of ``run``: its gate findings when the gate failed (``comparison`` is
    then ignored and may be None), else the comparison's tables. Always within
    ``COMMENT_LIMIT``; see the module docstring for the layout and the precision."""
    head = [_title(run), ""]
    if run.gate_findings:
        head += ["The pre-GPU gate failed: no server started.", ""]
        items = [f"- {_code(finding)}" for finding in run.gate_findings]
        return _fit(head, items, "findings", "the sweep's log lists them all")
    head += _about(run)
    if comparison is None:
        return _join([*head, "No result rows were stored for this run."])
    head += _baseline_lines(comparison, run.baseline_note)
    tiers = ["#### At the interactivity tiers", "", *_tier_table(comparison.tiers), ""]
    rows = [_point_row(point) for point in comparison.points]
    table_head = ["#### Per concurrency", "", *_point_header(comparison.stat)]
    if not rows:
        table_head = ["#### Per concurrency", "", "The run stored no points."]
    return _fit([*head, *tiers, *table_head], rows, "points", "the performance page lists them all")


def _title(run: RunSummary) -> str:
    run_id = f" {run.run_id}" if run.run_id else ""
    return f"### inferx unofficial run{run_id} — PR #{run.pr_number} @ {run.head_sha[:7]}"


def _about(run: RunSummary) -> list[str]:
    parts = [f"Label {_code(run.label)}" if run.label else "No label"]
    if run.canary:
        parts.append(f"canary {_code(run.canary)}: {run.canary_status or 'not run'}")
    else:
        parts.append("no canary")
    if run.job_counts:
        counts = ", ".join(f"{n} {status}" for status, n in sorted(run.job_counts.items()))
        parts.append(f"jobs: {counts}")
    lines = [" · ".join(parts), ""]
    if run.stopped:
        lines += [f"**Stopped:** {run.stopped}.", ""]
    if run.performance_url:
        lines += [f"View unofficial run (performance): {run.performance_url}", ""]
    if run.accuracy_url:
        lines += [f"View unofficial run (accuracy): {run.accuracy_url}", ""]
    return lines


def _baseline_lines(comparison: RunComparison, note: str | None) -> list[str]:
    lines = ["Baseline: the official points the leaderboard shows now."]
    if note:
        lines[0] = f"Baseline: official points, {note}."
    for found in comparison.baselines:
        named = " (named in the PR)" if found.named else ""
        image = f" @ {_code(found.image)}" if found.image else ": no official points"
        lines.append(
            f"- {_code(found.recipe_id)} vs {_code(found.baseline_recipe_id)}{named}{image}"
        )
    counts = ", ".join(
        f"{comparison.count(state)} {word}"
        for state, word in STATE_WORDS.items()
        if comparison.count(state)
    )
    lines += [
        "",
        f"Points: {counts or 'none'}. Interactivity, TTFT and TPOT at the {comparison.stat}; "
        "a cell reads baseline → PR (Δ, Δ%).",
        "",
    ]
    return lines


def _point_header(stat: str) -> list[str]:
    names = ["recipe", "workload", "config", "conc", "result", "state", "image",
             *(metric_header(m, stat) for m in METRICS)]  # fmt: skip
    align = ["---", "---", "---", "---:", "---", "---", "---", *(["---:"] * len(METRICS))]
    return [_row(names), _row(align)]


def state_text(point: PointComparison) -> str:
    """How a point ended, in words: ``compared``, ``no baseline``, ``failed (incomplete)``;
    ``(reused)`` when the run took the point over from another run instead of measuring."""
    state = STATE_WORDS[point.state]
    if point.state in ("failed", "invalid") and point.pr.status != state:
        state += f" ({point.pr.status})"
    return state + (" (reused)" if point.pr.measured_in else "")


def image_text(point: PointComparison) -> str:
    """The image tags of a point: ``baseline → PR``, or the PR's alone."""
    if point.baseline is None:
        return point.pr.image_tag
    return f"{point.baseline.image_tag} → {point.pr.image_tag}"


def _point_row(point: PointComparison) -> str:
    state = state_text(point)
    if point.state in ("failed", "invalid"):
        state = f"**{state}**"
    cells = [
        point.recipe_id, point.workload, point.config, str(point.conc),
        f"`{point.pr.result_id[:12]}`", state, image_text(point),
        *(cell(m, point) for m in METRICS),
    ]  # fmt: skip
    return _row(cells)


def _tier_table(tiers: Sequence[TierComparison]) -> list[str]:
    if not tiers:
        return ["No tier values: the run has no points."]
    names = ["recipe", "workload", "tier (tok/s/user)", "baseline tok/s/GPU", "PR tok/s/GPU",
             "Δ", "Δ%", "status"]  # fmt: skip
    lines = [_row(names), _row(["---", "---", "---:", "---:", "---:", "---:", "---:", "---"])]
    for row in tiers:
        tier = f"{row.tier:g}" + (" (headline)" if row.headline else "")
        lines.append(_row([
            row.recipe_id, row.workload, tier,
            fixed(row.baseline.tput_per_gpu, 1.0, TIER_DECIMALS),
            fixed(row.pr.tput_per_gpu, 1.0, TIER_DECIMALS),
            fixed(row.change.delta, 1.0, TIER_DECIMALS, sign=True),
            fixed(row.change.pct, 1.0, PCT_DECIMALS, sign=True),
            tier_status(row),
        ]))  # fmt: skip
    return lines


def tier_status(row: TierComparison) -> str:
    """``ok`` when both sides have a value at the tier, else why not, side by side."""
    words = [
        _side_word(side, name, missing)
        for side, name, missing in (
            (row.baseline, "baseline", "no baseline"),
            (row.pr, "PR", "no PR points"),
        )
        if side.state != "ok"
    ]
    return "; ".join(words) or "ok"


def _side_word(side: TierSide, name: str, missing: str) -> str:
    return missing if side.state == "none" else f"{name} {_TIER_WORDS[side.state]}"


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _code(text: str) -> str:
    """``text`` as an inline code span, fenced with more backticks than it holds."""
    fence = "`" * (max((len(run) for run in _TICKS.findall(text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _fit(head: list[str], items: list[str], noun: str, elsewhere: str) -> str:
    """``head`` and as many ``items`` as fit within the limit, then a note of the rest."""
    used = _size(_join(head)) + _NOTE_RESERVE
    kept: list[str] = []
    for item in items:
        used += _size(item) + 1
        if used > COMMENT_LIMIT:
            break
        kept.append(item)
    note: list[str] = []
    if len(kept) < len(items):
        left = len(items) - len(kept)
        note = ["", f"_{left} of {len(items)} {noun} left out to fit a comment; {elsewhere}._"]
    return _join([*head, *kept, *note])


def _size(text: str) -> int:
    return len(text.encode())


def _join(lines: Sequence[str]) -> str:
    return "\n".join(lines).rstrip("\n") + "\n"
