"""The sweep's summary table as printed: off a terminal each row on one line, COLUMNS rules."""

from __future__ import annotations

import io

from rich.console import Console

from inferx_pipeline.sweep.console import print_fitted, summary_table
from inferx_pipeline.sweep.report import JobOutcome, SweepReport

LONG_ID = "qwen3.827b-bf16-mi325x-vllm-mtp-isl1024-osl1024-tp8-ep1-dpa0-mtp3-c64-a-long-job-id"
DETAIL = "measured for 4.1 s, less than the minimum 10 s"


def _report() -> SweepReport:
    outcome = JobOutcome(
        job_id=LONG_ID,
        fingerprint="f" * 16,
        conc=64,
        sku="mi325x",
        recipe_id="qwen3.827b-bf16-mi325x-vllm-mtp",
        status="result-invalid",
        message=DETAIL,
        attempts=(1, 2),
    )
    return SweepReport(
        run_id="0123456789abcdef",
        outcomes=(outcome,),
        groups=1,
        server_launches=1,
        started_at=0.0,
        finished_at=1.0,
    )


def _printed(console_width: int, environ: dict[str, str]) -> list[str]:
    out = io.StringIO()  # not a terminal, as a pipe or a CI log
    print_fitted(Console(file=out, width=console_width), summary_table(_report()), environ)
    return out.getvalue().splitlines()


def test_off_a_terminal_a_row_stays_on_one_line() -> None:
    [row] = [line for line in _printed(80, {}) if LONG_ID in line]
    assert "result-invalid" in row and "1,2" in row and DETAIL in row


def test_a_column_empty_in_every_row_is_left_out() -> None:
    [header] = [line for line in _printed(80, {}) if " job " in line]
    assert [cell.strip() for cell in header.strip("┃ ").split("┃")] == [
        "job", "status", "attempts", "detail",
    ]  # fmt: skip


def test_columns_from_the_environment_still_wins() -> None:
    lines = _printed(80, {"COLUMNS": "80"})
    assert max(len(line) for line in lines) == 80
    assert not any(LONG_ID in line for line in lines)  # folded to fit, as asked
    assert any("│ result-invalid │" in line for line in lines)  # a status is never split
