"""normalize: explicit RawResult -> ResultRecord mapping (units, interactivity, per-GPU, status)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from inferx_pipeline.errors import MalformedArtifactError
from inferx_pipeline.results.normalize import LATENCY_KEYS, normalize
from inferx_pipeline.results.record import RunContext
from tests.results.samples import RUN, identity, raw_result_payload, sha, vllm_payload


def _normalize(payload: dict[str, object], **identity_overrides: object):  # type: ignore[no-untyped-def]
    return normalize(
        payload, identity(**identity_overrides), RUN, artifact_sha256=sha("a"), source="inferx"
    )


def test_latencies_are_converted_from_ms_to_seconds() -> None:
    rec = _normalize(raw_result_payload())
    assert (rec.ttft_mean_s, rec.ttft_median_s, rec.ttft_p90_s, rec.ttft_p99_s) == pytest.approx(
        (0.2, 0.18, 0.3, 0.4)
    )
    assert rec.e2el_p99_s == pytest.approx(2.5)
    assert rec.itl_median_s == pytest.approx(0.018)
    assert set(LATENCY_KEYS) == {
        f"{m}_{s}_s"
        for m in ("ttft", "tpot", "itl", "e2el")
        for s in ("mean", "median", "p90", "p99")
    }


def test_interactivity_is_1000_over_tpot_ms_at_each_statistic() -> None:
    rec = _normalize(raw_result_payload())
    # tpot mean/median/p90/p99 = 20/25/40/50 ms
    assert (rec.intvty_mean, rec.intvty_median, rec.intvty_p90, rec.intvty_p99) == pytest.approx(
        (50.0, 40.0, 25.0, 20.0)
    )


def test_a_tpot_of_zero_is_no_sample_so_tpot_and_interactivity_are_null() -> None:
    # vLLM writes np.mean(tpots or 0) when no request had two tokens; our client's TPOT is 0
    # for a stream that arrived in one read. Neither is a measured TPOT.
    zero = {f"{stat}_tpot_ms": 0.0 for stat in ("mean", "median", "p90", "p99")}
    rec = _normalize(vllm_payload(**zero))
    assert (rec.tpot_mean_s, rec.tpot_median_s, rec.tpot_p90_s, rec.tpot_p99_s) == (None,) * 4
    assert (rec.intvty_mean, rec.intvty_median, rec.intvty_p90, rec.intvty_p99) == (None,) * 4
    assert rec.ttft_median_s == pytest.approx(0.18) and rec.itl_median_s == pytest.approx(0.018)
    only_median = _normalize(vllm_payload(median_tpot_ms=0.0))
    assert only_median.tpot_median_s is None and only_median.intvty_median is None
    assert only_median.tpot_mean_s == pytest.approx(0.02) and only_median.intvty_mean == 50.0


def test_per_gpu_throughput_divides_by_tp_times_pp_times_pcp() -> None:
    rec = _normalize(raw_result_payload(), tp=2, pp=2, pcp=2)
    assert rec.gpus == 8
    # 15360 total, 5120 output tok/s over 8 GPUs
    assert (rec.tput_per_gpu, rec.output_tput_per_gpu, rec.input_tput_per_gpu) == pytest.approx(
        (1920.0, 640.0, 1280.0)
    )
    assert _normalize(raw_result_payload(), tp=8, pp=1).tput_per_gpu == pytest.approx(1920.0)
    assert _normalize(raw_result_payload(), tp=1, pp=1).tput_per_gpu == pytest.approx(15360.0)


def test_counts_rates_and_measured_lengths() -> None:
    rec = _normalize(raw_result_payload(completed=90, failed=10))
    assert (rec.num_requests, rec.failed_requests, rec.success_rate) == (100, 10, 0.9)
    assert (rec.measured_isl, rec.measured_osl, rec.duration_s) == (1024.0, 512.0, 10.0)
    assert rec.request_throughput == 10.0


def test_provenance_and_identity_columns() -> None:
    rec = _normalize(
        raw_result_payload(
            acceptance={
                "drafts": 10,
                "draft_tokens": 30,
                "accepted_tokens": 15,
                "acceptance_length": 2.5,
            }
        )
    )
    assert rec.started_at == datetime(2026, 1, 1, tzinfo=UTC)
    assert rec.finished_at == datetime(2026, 1, 1, 0, 0, 10, tzinfo=UTC)
    assert (rec.client_version, rec.simulated, rec.official) == ("0.1.0", True, False)
    assert (rec.status, rec.valid, rec.source) == ("ok", True, "inferx")
    assert rec.realized_al == 2.5
    assert rec.image_tag == "v0.11.0"
    assert rec.artifacts == '{"server.log": "' + "a" * 64 + '"}'
    assert (rec.recipe_id, rec.sku, rec.conc, rec.run_id, rec.attempt) == (
        "dsr1-fp8-h200-vllm",
        "h200",
        16,
        "run-1",
        1,
    )


def test_image_digest_and_engine_version_fall_back_to_metadata() -> None:
    payload = raw_result_payload(
        metadata={"image_digest": "sha256:abc", "engine_version": "0.11.0"}
    )
    rec = _normalize(payload)
    assert (rec.image_digest, rec.engine_version) == ("sha256:abc", "0.11.0")


def test_result_id_changes_with_attempt_and_conc() -> None:
    base = _normalize(raw_result_payload())
    retry = normalize(
        raw_result_payload(),
        identity(),
        RunContext(run_id="run-1", attempt=2, simulated=True),
        artifact_sha256=sha("b"),
        source="inferx",
    )
    other_conc = _normalize(raw_result_payload(), conc=32)
    assert len({base.result_id, retry.result_id, other_conc.result_id}) == 3


@pytest.mark.parametrize(
    ("overrides", "status", "valid"),
    [
        ({"valid": False}, "invalid", False),
        ({"status": "failed"}, "failed", False),
        ({"status": "incomplete"}, "incomplete", False),
    ],
)
def test_status_mapping(overrides: dict[str, object], status: str, valid: bool) -> None:
    rec = _normalize(raw_result_payload(**overrides))
    assert (rec.status, rec.valid) == (status, valid)


def test_run_without_completed_requests_is_failed_with_null_latencies() -> None:
    payload = vllm_payload(
        completed=0,
        failed=100,
        total_output_tokens=0,
        total_input_tokens=0,
        output_throughput=0.0,
        total_token_throughput=0.0,
        request_throughput=0.0,
    )
    for key in list(payload):
        if key.endswith("_ms"):
            payload[key] = None
    rec = _normalize(payload)
    assert (rec.status, rec.valid, rec.success_rate) == ("failed", False, 0.0)
    assert rec.ttft_mean_s is None and rec.intvty_mean is None


def test_vllm_date_is_taken_as_utc_when_no_unix_times() -> None:
    rec = _normalize(vllm_payload(date="20260315-123000"))
    assert rec.started_at == datetime(2026, 3, 15, 12, 30, tzinfo=UTC)
    assert rec.finished_at == datetime(2026, 3, 15, 12, 30, 10, tzinfo=UTC)


def test_official_is_never_set_on_a_simulated_run() -> None:
    run = RunContext(run_id="r", simulated=True, official=True)
    rec = normalize(
        raw_result_payload(), identity(), run, artifact_sha256=sha("a"), source="inferx"
    )
    assert rec.official is False


def test_bad_date_is_rejected() -> None:
    with pytest.raises(MalformedArtifactError, match=r"date: got 'yesterday'") as info:
        _normalize(vllm_payload(date="yesterday"))
    assert info.value.code == "wrong-type"
