"""Rejection rules for raw payloads: each malformed class gets its own reason code."""

from __future__ import annotations

import math

import pytest

from inferx_pipeline.errors import MalformedArtifactError
from inferx_pipeline.results.checks import REASONS, reject
from inferx_pipeline.results.normalize import check_payload
from tests.results.samples import vllm_payload

CASES = [
    pytest.param(
        {"duration": None}, "missing-keys", r"missing required keys: duration", id="missing"
    ),
    pytest.param({"mean_ttft_ms": math.nan}, "not-finite", r"mean_ttft_ms: got nan", id="nan"),
    pytest.param({"total_token_throughput": math.inf}, "not-finite", r"got inf", id="inf"),
    pytest.param(
        {"output_throughput": -5.0},
        "negative",
        r"output_throughput: got -5.0; expected >= 0",
        id="negative",
    ),
    pytest.param(
        {"completed": "100"}, "wrong-type", r"completed: got '100'; expected a number", id="string"
    ),
    pytest.param({"completed": True}, "wrong-type", r"completed: got True", id="bool"),
    # duration written in ms: tokens / duration disagrees with throughput by 1000x
    pytest.param(
        {"duration": 10_000.0},
        "wrong-units",
        r"output_throughput: got 5120.*total_output_tokens / duration",
        id="duration-ms",
    ),
    # latencies written in microseconds: one TTFT longer than the whole run
    pytest.param(
        {"mean_ttft_ms": 200_000.0},
        "wrong-units",
        r"mean_ttft_ms: got 200000 ms, longer than the whole run",
        id="ttft-us",
    ),
    # interactivity computed from TPOT in seconds
    pytest.param(
        {"mean_intvty": 50_000.0},
        "wrong-units",
        r"mean_intvty: got 50000, but 1000 / mean_tpot_ms gives 50",
        id="intvty",
    ),
]


@pytest.mark.parametrize(("overrides", "code", "message"), CASES)
def test_malformed_payload_is_rejected_with_reason(
    overrides: dict[str, object], code: str, message: str
) -> None:
    with pytest.raises(MalformedArtifactError, match=message) as info:
        check_payload(vllm_payload(**overrides))
    assert info.value.code == code


def test_good_payload_passes() -> None:
    check_payload(vllm_payload())


def test_reject_refuses_unknown_codes() -> None:
    assert reject("negative", "x").code == "negative"
    assert "wrong-units" in REASONS
    with pytest.raises(ValueError, match="unknown rejection code"):
        reject("bogus", "x")
