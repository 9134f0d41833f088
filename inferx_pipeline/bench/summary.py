"""The human summary of a RawResult: one rich table, as ``inferx bench`` prints it."""

from __future__ import annotations

from rich.table import Table

from inferx_pipeline.bench.result import RawResult


def _ms(value: float | None) -> str:
    return "n/s" if value is None else f"{value:.2f}"


def summary_table(result: RawResult) -> Table:
    """Counts, throughput and latency percentiles (``n/s`` = not significant)."""
    table = Table(title=f"{result.model_id} @ {result.endpoint} ({result.status})")
    table.add_column("metric")
    table.add_column("value", justify="right")
    rows = [
        ("completed / failed", f"{result.completed} / {result.failed}"),
        ("duration (s)", f"{result.duration:.2f}"),
        ("request throughput (req/s)", f"{result.request_throughput:.2f}"),
        ("output throughput (tok/s)", f"{result.output_throughput:.1f}"),
        ("total throughput (tok/s)", f"{result.total_token_throughput:.1f}"),
        (
            "mean / median interactivity (tok/s/user)",
            f"{_ms(result.mean_intvty)} / {_ms(result.median_intvty)}",
        ),
    ]
    for name in ("ttft", "tpot", "itl", "e2el"):
        stats = [getattr(result, f"{s}_{name}_ms") for s in ("mean", "median", "p90", "p99")]
        rows.append((f"{name.upper()} mean/median/p90/p99 (ms)", " / ".join(map(_ms, stats))))
    if result.acceptance is not None:
        rows.append(("acceptance length", f"{result.acceptance.acceptance_length:.3f}"))
    if result.agentic is not None and result.agentic.e2e_interactivity is not None:
        rows.append(("E2E interactivity (tok/s/user)", f"{result.agentic.e2e_interactivity:.1f}"))
    rows.append(
        (
            "client lag p99 (ms) / CPU (%)",
            f"{result.client.event_loop_lag_p99_ms:.2f} / {result.client.cpu_percent:.0f}",
        )
    )
    rows.append(("valid", "yes" if result.valid else "no: " + "; ".join(result.invalid_reasons)))
    for label, value in rows:
        table.add_row(label, value)
    return table
