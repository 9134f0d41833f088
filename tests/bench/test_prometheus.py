"""Prometheus /metrics: parsing, counter deltas into acceptance length, scrape errors."""

from __future__ import annotations

import pytest

from inferx_pipeline.bench.prometheus import acceptance, metrics_url, parse, scrape
from inferx_pipeline.errors import EndpointError
from tests.bench.server import TestServer, refused_url


def _text(drafts: int, accepted: int) -> str:
    return (
        "# TYPE vllm:spec_decode_num_drafts counter\n"
        f'vllm:spec_decode_num_drafts_total{{engine="0"}} {drafts / 2}\n'
        f'vllm:spec_decode_num_drafts_total{{engine="1"}} {drafts / 2}\n'
        "# TYPE vllm:spec_decode_num_draft_tokens counter\n"
        f"vllm:spec_decode_num_draft_tokens_total {drafts * 3}\n"
        "# TYPE vllm:spec_decode_num_accepted_tokens counter\n"
        f"vllm:spec_decode_num_accepted_tokens_total {accepted}\n"
    )


def test_acceptance_length_is_one_plus_accepted_per_draft() -> None:
    got = acceptance(parse(_text(100, 150)), parse(_text(300, 550)))
    assert got is not None
    assert (got.drafts, got.draft_tokens, got.accepted_tokens) == (200, 600, 400)
    assert got.acceptance_length == pytest.approx(3.0)


def test_no_spec_counters_or_no_drafts_means_no_acceptance() -> None:
    plain = parse("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n")
    assert plain.get("vllm:num_requests_running") == 3
    assert acceptance(plain, plain) is None
    same = parse(_text(10, 5))
    assert acceptance(same, same) is None


def test_metrics_url_from_base_or_full() -> None:
    assert metrics_url("http://h:1/v1") == "http://h:1/metrics"
    assert metrics_url("http://h:1/metrics") == "http://h:1/metrics"


def test_scrape_live_server_and_refused(server: TestServer) -> None:
    assert scrape(server.url).get("vllm:num_requests_running") == 0
    url = refused_url()
    with pytest.raises(EndpointError, match=f"{url}/metrics: cannot scrape metrics"):
        scrape(url)
