"""Pure statistics: vllm bench serve definitions on hand-computed request timelines."""

from __future__ import annotations

import pytest

from inferx_pipeline.bench import metrics
from inferx_pipeline.bench.records import RequestRecord

MS = 1_000_000  # ns per ms
ALL = {"p50": 1, "p90": 1, "p95": 1, "p99": 1, "p99.9": 1}


def _record(index: int, start_ms: int, chunks_ms: list[int], tokens: int, prompt: int = 10):
    return RequestRecord(
        index=index,
        prompt_len=prompt,
        max_tokens=tokens,
        start_ns=start_ms * MS,
        chunk_ns=[c * MS for c in chunks_ms],
        end_ns=(chunks_ms[-1] + 1) * MS if chunks_ms else start_ms * MS,
        output_tokens=tokens,
        prompt_tokens=prompt,
    )


def test_ttft_itl_e2el_tpot_per_request() -> None:
    r = _record(0, 0, [100, 110, 130, 160], tokens=4)
    assert r.ttft_s == pytest.approx(0.100)
    assert r.itls_s == pytest.approx([0.010, 0.020, 0.030])
    assert r.e2el_s == pytest.approx(0.160)
    # (160 - 100) ms / (4 - 1) tokens
    assert r.tpot_s == pytest.approx(0.020)


def test_tpot_uses_usage_tokens_not_chunks() -> None:
    # speculative decoding: 2 chunks carrying 7 tokens
    r = _record(0, 0, [50, 110], tokens=7)
    assert r.tpot_s == pytest.approx(0.060 / 6)


def test_single_token_request_has_no_tpot() -> None:
    assert _record(0, 0, [40], tokens=1).tpot_s is None


def test_a_stream_read_in_one_go_has_no_tpot() -> None:
    # Every chunk stamped at one read: the decode steps were not timed (not TPOT 0).
    record = _record(0, 0, [40, 40, 40], tokens=96)
    assert record.tpot_s is None
    assert record.e2el_s == pytest.approx(0.040)


def test_compute_pools_itl_and_skips_failures() -> None:
    a = _record(0, 0, [100, 110, 130], tokens=3, prompt=10)
    b = _record(1, 0, [200, 240], tokens=2, prompt=20)
    failed = RequestRecord(index=2, prompt_len=30, max_tokens=5, start_ns=0, end_ns=5 * MS)
    failed.error = "HTTP 500"
    m = metrics.compute([a, b, failed], duration_s=2.0, min_samples=ALL)
    assert (m.completed, m.failed) == (2, 1)
    assert m.total_input_tokens == 30
    assert m.total_output_tokens == 5
    assert m.request_throughput == pytest.approx(1.0)
    assert m.output_throughput == pytest.approx(2.5)
    assert m.total_token_throughput == pytest.approx(17.5)
    assert m.stats["mean_ttft_ms"] == pytest.approx(150.0)
    # ITL pooled: 10, 20 from a; 40 from b
    assert m.stats["mean_itl_ms"] == pytest.approx(70 / 3)
    assert m.stats["median_itl_ms"] == pytest.approx(20.0)
    # TPOT a: 30/2 = 15; b: 40/1 = 40
    assert m.stats["mean_tpot_ms"] == pytest.approx(27.5)
    assert m.stats["std_tpot_ms"] == pytest.approx(12.5)
    assert m.stats["mean_e2el_ms"] == pytest.approx(185.0)
    assert m.stats["mean_intvty"] == pytest.approx(1000 / 27.5)


def test_percentiles_interpolate_linearly() -> None:
    records = [_record(i, 0, [10 * (i + 1)], tokens=1) for i in range(11)]  # TTFT 10..110 ms
    m = metrics.compute(records, 1.0, ALL)
    assert m.stats["p50_ttft_ms"] == pytest.approx(60.0)
    assert m.stats["p90_ttft_ms"] == pytest.approx(100.0)
    assert m.stats["p95_ttft_ms"] == pytest.approx(105.0)
    assert m.stats["p99.9_ttft_ms"] == pytest.approx(109.9)


def test_percentile_below_its_sample_minimum_is_null_and_listed() -> None:
    records = [_record(i, 0, [10 * (i + 1), 10 * (i + 1) + 5], tokens=2) for i in range(63)]
    m = metrics.compute(records, 1.0, {"p50": 1, "p90": 64, "p95": 130, "p99": 662})
    assert m.stats["p90_ttft_ms"] is None
    assert m.stats["p50_ttft_ms"] is not None
    assert m.stats["p90_intvty"] is None
    assert {"p90_ttft_ms", "p99_tpot_ms", "p95_e2el_ms"} <= set(m.not_significant)
    assert "p90_itl_ms" in m.not_significant  # 63 pooled gaps
    more = metrics.compute([*records, _record(63, 0, [700, 705], tokens=2)], 1.0, {"p90": 64})
    assert more.stats["p90_ttft_ms"] is not None


def test_no_completed_request_gives_nulls_not_errors() -> None:
    failed = RequestRecord(index=0, prompt_len=1, max_tokens=1, start_ns=1, end_ns=2, error="x")
    m = metrics.compute([failed], 0.0, ALL)
    assert m.completed == 0
    assert m.stats["mean_ttft_ms"] is None
    assert m.request_throughput == 0.0
    assert m.max_output_tokens_per_s == 0.0


def test_max_concurrent_is_exact_overlap() -> None:
    a = RequestRecord(index=0, prompt_len=1, max_tokens=1, start_ns=0, end_ns=10)
    b = RequestRecord(index=1, prompt_len=1, max_tokens=1, start_ns=5, end_ns=15)
    c = RequestRecord(index=2, prompt_len=1, max_tokens=1, start_ns=10, end_ns=20)
    # a ends at 10 exactly when c starts: the end is counted first
    assert metrics.max_concurrent([a, b, c]) == 2


def test_max_output_tokens_per_second_bucket() -> None:
    a = _record(0, 0, [100, 200, 1100], tokens=3)
    b = _record(1, 0, [300, 1200, 1300], tokens=3)
    assert metrics.max_output_tokens_per_s([a, b]) == 3.0


def test_run_window_spans_first_send_to_last_finish() -> None:
    a = _record(0, 100, [200], tokens=1)  # ends 201 ms
    b = _record(1, 150, [400], tokens=1)  # ends 401 ms
    assert metrics.run_window_s([a, b]) == pytest.approx(0.301)
