"""The PR comment: every number in its tables is a stored row's at the stated precision
(parsed back from the Markdown), it fits GitHub's limit, a failed gate lists findings."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from inferx_pipeline.leaderboard.compare import RunComparison, compare_columns, compare_run
from inferx_pipeline.leaderboard.config import LeaderboardConfig
from inferx_pipeline.leaderboard.frame import prepare
from inferx_pipeline.leaderboard.pareto import pareto_front
from inferx_pipeline.leaderboard.pr_report import (
    COMMENT_LIMIT,
    RunSummary,
    fixed,
    markdown_report,
)
from inferx_pipeline.leaderboard.synthetic import frame_from_rows
from inferx_pipeline.leaderboard.tiers import tier_values
from inferx_pipeline.results.filters import ResultFilter
from inferx_pipeline.results.store import ResultStore
from tests.leaderboard.test_compare import PR, official, point

SUMMARY = RunSummary(
    pr_number=7, head_sha=PR["head_sha"], run_id="pr-run", label="sweep-changed",
    canary="recipe-a/fixed-seq-len-1024x1024/tp8/c1", canary_status="ok",
    job_counts={"ok": 4, "failed": 1},
    performance_url="https://lb.example/unofficial/pr-run/",
    accuracy_url="https://lb.example/unofficial/pr-run/accuracy.html",
)  # fmt: skip
# The report's stated precision: column -> (ResultRecord column, scale, decimals).
PRECISION = {
    "tok/s/GPU": ("tput_per_gpu", 1.0, 1),
    "output tok/s/GPU": ("output_tput_per_gpu", 1.0, 1),
    "tok/s/user (median)": ("intvty_median", 1.0, 1),
    "TTFT ms (median)": ("ttft_median_s", 1000.0, 1),
    "TPOT ms (median)": ("tpot_median_s", 1000.0, 2),
}
# A compared cell: baseline → PR (Δ, Δ%).
CELL = re.compile(
    r"^(?P<base>-?[\d.]+) → (?P<pr>-?[\d.]+) \((?P<delta>[+-][\d.]+)(, (?P<pct>[+-][\d.]+)%)?\)$"
)


def fmt(value: float, scale: float, decimals: int, sign: bool = False) -> str:
    text = f"{float(value) * scale:+.{decimals}f}"
    text = "+" + text[1:] if float(text) == 0 else text  # no negative zero
    return text if sign else text.removeprefix("+")


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ResultStore]:
    base = official(
        "vllm/vllm-openai:v2", 2, [(81.37, 201.234), (40.55, 612.349), (20.11, 1003.75)]
    )
    pr = [
        point(1, 83.21, 221.987, **PR), point(2, 41.07, 640.004, **PR),
        point(4, 19.86, 1090.55, **PR), point(8, 9.93, 1203.3, **PR),  # no baseline
        point(16, 0.0, 0.0, status="failed", **PR),
    ]  # fmt: skip
    store = ResultStore(f"sqlite:///{tmp_path_factory.mktemp('pr') / 'r.sqlite'}")
    store.write_frame(frame_from_rows([*base, *pr]))
    yield store
    store.close()


def _read(store: ResultStore) -> tuple[pd.DataFrame, pd.DataFrame]:
    mine = store.read_frame(ResultFilter(pull_requests="only", run_ids=("pr-run",)))
    return mine, store.read_frame(None, compare_columns("median"))


@pytest.fixture(scope="module")
def comparison(stored: ResultStore, config: LeaderboardConfig) -> RunComparison:
    return compare_run(*_read(stored), config.tier_set, "median")


def tables(markdown: str) -> list[list[dict[str, str]]]:
    """Every Markdown table as rows of header -> cell."""
    found, lines = [], markdown.splitlines()
    for n, line in enumerate(lines):
        if line.startswith("| ---") and n > 0:
            header = _cells(lines[n - 1])
            body = []
            for row in lines[n + 1 :]:
                if not row.startswith("|"):
                    break
                body.append(dict(zip(header, _cells(row), strict=True)))
            found.append(body)
    return found


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def test_the_head_lines(comparison: RunComparison) -> None:
    lines = markdown_report(comparison, SUMMARY).splitlines()
    assert lines[0] == "### inferx unofficial run pr-run — PR #7 @ c0ffee0"
    assert lines[2] == (
        "Label `sweep-changed` · canary `recipe-a/fixed-seq-len-1024x1024/tp8/c1`: ok "
        "· jobs: 1 failed, 4 ok"
    )
    assert "View unofficial run (performance): https://lb.example/unofficial/pr-run/" in lines
    assert (
        "View unofficial run (accuracy): https://lb.example/unofficial/pr-run/accuracy.html"
        in lines
    )
    assert "- `recipe-a` vs `recipe-a` @ `vllm/vllm-openai:v2`" in lines


def test_every_point_number_is_the_stored_rows(
    stored: ResultStore, comparison: RunComparison
) -> None:
    rows = store_rows(stored)
    _, points = tables(markdown_report(comparison, SUMMARY))
    assert len(points) == 5
    states = {}
    for line in points:
        mine = rows.loc[rows["result_id"].str.startswith(line["result"].strip("`"))]
        assert len(mine) == 1, line["result"]
        ours = mine.iloc[0]
        assert (line["conc"], line["config"]) == (str(ours["conc"]), "tp8")
        states[ours["conc"]] = line["state"]
        if line["state"] == "**failed**":
            assert {line[h] for h in PRECISION} == {"-"}
            continue
        theirs = baseline_of(rows, ours)
        for header, (column, scale, decimals) in PRECISION.items():
            _check_cell(line[header], ours[column], theirs, column, scale, decimals)
    assert states == {1: "compared", 2: "compared", 4: "compared", 8: "no baseline",
                      16: "**failed**"}  # fmt: skip


def _check_cell(
    text: str, ours: float, theirs: Any, column: str, scale: float, decimals: int
) -> None:
    if theirs is None:
        assert text == fmt(ours, scale, decimals)
        return
    match = CELL.match(text)
    assert match, text
    base = theirs[column]
    assert match["pr"] == fmt(ours, scale, decimals)
    assert match["base"] == fmt(base, scale, decimals)
    assert match["delta"] == fmt(ours - base, scale, decimals, sign=True)
    assert match["pct"] == fmt(100 * (ours - base) / base, 1.0, 1, sign=True)


def store_rows(store: ResultStore) -> pd.DataFrame:
    return store.read_frame(ResultFilter(pull_requests="include"))


def baseline_of(rows: pd.DataFrame, ours: pd.Series) -> pd.Series | None:
    found = rows.loc[rows["pr_number"].isna() & (rows["conc"] == ours["conc"])]
    return found.iloc[0] if len(found) else None


def test_every_tier_number_is_read_off_the_stored_fronts(
    stored: ResultStore, comparison: RunComparison, config: LeaderboardConfig
) -> None:
    rows = store_rows(stored)
    tiers, _ = tables(markdown_report(comparison, SUMMARY))
    fronts = {
        side: tier_values(pareto_front(prepare(part), "median"), config.tiers, "median")
        .set_index("tier")
        for side, part in rows.groupby(rows["pr_number"].notna())
    }  # fmt: skip
    assert [line["tier (tok/s/user)"] for line in tiers] == ["30", "50 (headline)", "75", "100"]
    for line in tiers:
        tier = float(line["tier (tok/s/user)"].split()[0])
        base, ours = fronts[False].loc[tier], fronts[True].loc[tier]
        if ours["status"] != "ok" or base["status"] != "ok":
            assert line["Δ"] == line["Δ%"] == "-"
            continue
        assert line["baseline tok/s/GPU"] == fmt(base["tput_per_gpu"], 1.0, 1)
        assert line["PR tok/s/GPU"] == fmt(ours["tput_per_gpu"], 1.0, 1)
        delta = ours["tput_per_gpu"] - base["tput_per_gpu"]
        assert line["Δ"] == fmt(delta, 1.0, 1, sign=True)
        assert line["Δ%"] == fmt(100 * delta / base["tput_per_gpu"], 1.0, 1, sign=True)
        assert line["status"] == "ok"
    assert tiers[-1]["status"] == "baseline not reached; PR not reached"


def test_the_point_table_is_cut_to_fit_a_comment_never_the_tier_table(
    config: LeaderboardConfig,
) -> None:
    many = [point(c, 1000.0 / c, 10.0 * c, **PR | {"tp": tp, "gpus": tp})
            for c in range(1, 401) for tp in (1, 2, 4, 8)]  # fmt: skip
    base = official("vllm/vllm-openai:v2", 2, [(1000.0 / c, 9.0 * c) for c in range(1, 9)])
    comparison = compare_run(
        frame_from_rows(many), frame_from_rows(base), config.tier_set, "median"
    )
    text = markdown_report(comparison, SUMMARY)
    assert len(text.encode()) <= COMMENT_LIMIT
    tiers, points = tables(text)
    assert len(tiers) == len(comparison.tiers) == 4
    note = re.search(r"_(\d+) of 1600 points left out to fit a comment", text)
    assert note and int(note[1]) + len(points) == 1600 and 0 < len(points) < 1600
    assert text.rstrip().endswith("the performance page lists them all._")


def test_a_failed_gate_lists_its_findings_and_no_tables() -> None:
    findings = ("recipes/dsr1/fp8-h200.yaml:14: scenarios[0].tp: got 3; expected a power of two",
                "recipes/x.yaml:2: `image` has a | and a `` run")  # fmt: skip
    summary = RunSummary(pr_number=7, head_sha=PR["head_sha"], run_id=None,
                         gate_findings=findings)  # fmt: skip
    text = markdown_report(None, summary)
    assert text.splitlines()[:3] == [
        "### inferx unofficial run — PR #7 @ c0ffee0", "",
        "The pre-GPU gate failed: no server started.",
    ]  # fmt: skip
    assert f"- `{findings[0]}`" in text
    assert "- ```recipes/x.yaml:2: `image` has a | and a `` run```" in text
    assert "| ---" not in text and "View unofficial run" not in text
    huge = summary.model_copy(
        update={"gate_findings": tuple(f"{'x' * 300} {n}" for n in range(400))}
    )
    cut = markdown_report(None, huge)
    assert len(cut.encode()) <= COMMENT_LIMIT and "of 400 findings left out" in cut


def test_a_run_without_rows(config: LeaderboardConfig) -> None:
    empty = compare_run(frame_from_rows([]), frame_from_rows([]), config.tier_set, "median")
    text = markdown_report(empty, SUMMARY)
    assert "The run stored no points." in text and "No tier values" in text
    assert "No result rows were stored" in markdown_report(None, SUMMARY)


def test_numbers_print_at_fixed_precision() -> None:
    """The precision the docstring states, and no negative zero."""
    assert fixed(1234.56) == "1234.6" and fixed(0.012345, 1000.0, 2) == "12.35"
    assert fixed(-0.04, sign=True) == "+0.0" and fixed(None) == "-"
    assert fixed(3.25, sign=True) == "+3.2"  # an exact half goes to the even digit
