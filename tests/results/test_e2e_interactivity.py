"""E2E-normalized interactivity from a RawResult's per-request lists, through normalize."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from inferx_pipeline.bench.agentic_stats import summarize_agentic
from inferx_pipeline.bench.records import RequestRecord
from inferx_pipeline.errors import MalformedArtifactError
from inferx_pipeline.results.e2e_interactivity import e2e_interactivity, seconds_per_token
from inferx_pipeline.results.normalize import normalize
from tests.results.samples import RUN, identity, raw_result_payload, sha, vllm_payload

# Three completed requests and a failed one: (TTFT s, inter-chunk gaps s, output tokens).
REQUESTS = [(0.5, [0.1, 0.1, 0.3], 4), (1.0, [0.5], 2), (0.2, [0.2] * 9, 10)]


def _payload(**overrides: Any) -> dict[str, Any]:
    lists = {
        "ttfts": [t for t, _, _ in REQUESTS] + [0.0],
        "itls": [g for _, g, _ in REQUESTS] + [[]],
        "output_lens": [n for _, _, n in REQUESTS] + [0],
        "errors": ["", "", "", "timeout"],
    }
    return vllm_payload(**(lists | overrides))


def test_each_statistic_is_one_over_e2el_per_output_token() -> None:
    # E2EL = TTFT + gaps: 1.0 s / 4, 1.5 s / 2, 2.0 s / 10 -> 0.25, 0.75, 0.2 s per token.
    assert seconds_per_token(_payload()) == pytest.approx([0.25, 0.75, 0.2])
    got = e2e_interactivity(_payload())
    per_token = [0.25, 0.75, 0.2]
    assert got == pytest.approx({
        "e2e_intvty_mean": 1 / np.mean(per_token),
        "e2e_intvty_median": 1 / 0.25,
        "e2e_intvty_p90": 1 / np.percentile(per_token, 90),
        "e2e_intvty_p99": 1 / np.percentile(per_token, 99),
    })  # fmt: skip


def test_it_is_the_agentic_summarys_axis_at_p90() -> None:
    records = []
    for index, (ttft, gaps, tokens) in enumerate(REQUESTS):
        chunks = list(np.cumsum([ttft, *gaps]) * 1e9 + 1e9)
        records.append(RequestRecord(
            index=index, prompt_len=10, max_tokens=tokens, start_ns=10**9,
            chunk_ns=[int(c) for c in chunks], output_tokens=tokens,
        ))  # fmt: skip
    summary, _ = summarize_agentic(records, {})
    assert e2e_interactivity(_payload())["e2e_intvty_p90"] == pytest.approx(
        summary.e2e_interactivity
    )


def test_null_without_per_request_lists_or_where_the_e2el_statistic_is_null() -> None:
    assert set(e2e_interactivity(vllm_payload()).values()) == {None}
    got = e2e_interactivity(_payload(p99_e2el_ms=None))  # too few samples for a p99
    assert got["e2e_intvty_p99"] is None and got["e2e_intvty_median"] == pytest.approx(4.0)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"errors": ["", ""]}, "per-request lists differ in length: ttfts 4, itls 4"),
        ({"itls": [[0.1], "x", [], []]}, "itls[1]: got 'x'; expected a list"),
        ({"ttfts": [0.5, None, 0.2, 0.0]}, "ttfts[1]: got null; expected a number"),
    ],
)
def test_malformed_lists_are_rejected_naming_the_entry(
    overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(MalformedArtifactError) as err:
        e2e_interactivity(_payload(**overrides))
    assert err.value.code == "wrong-type" and message in str(err.value)


def test_normalize_stores_it_beside_the_tpot_interactivity() -> None:
    # The sample RawResult: 100 requests of 512 tokens, each TTFT 0.2 s and one 19 ms gap
    # -> E2EL 0.219 s, so 512 / 0.219 tok/s/user at every statistic.
    rec = normalize(
        raw_result_payload(), identity(), RUN, artifact_sha256=sha("a"), source="inferx"
    )
    assert rec.e2e_intvty_median == rec.e2e_intvty_p99 == pytest.approx(512 / 0.219)
    assert rec.intvty_median == pytest.approx(40.0)
