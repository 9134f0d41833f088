"""Scrape an endpoint's Prometheus ``/metrics`` and turn counter deltas into facts.

Used before and after a run: the realized speculative acceptance length is
AL = 1 + accepted tokens / drafts over the run, as vLLM defines it.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from dataclasses import dataclass

from inferx_pipeline.bench.client import base_url
from inferx_pipeline.bench.result import Acceptance
from inferx_pipeline.errors import EndpointError

DRAFTS = "vllm:spec_decode_num_drafts_total"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"


@dataclass(frozen=True)
class MetricsSnapshot:
    """Sample values summed over label sets, by sample name; ``taken_at`` unix seconds."""

    samples: dict[str, float]
    taken_at: float

    def get(self, name: str) -> float | None:
        """A sample's value, None when the server does not export it."""
        return self.samples.get(name)


def parse(text: str, taken_at: float = 0.0) -> MetricsSnapshot:
    """A snapshot from Prometheus text exposition format."""
    # Imported here: prometheus_client pulls in its HTTP server (~0.1 s), which every load
    # of the code location would pay for a parser that only a measurement calls.
    from prometheus_client.parser import text_string_to_metric_families

    samples: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[sample.name] = samples.get(sample.name, 0.0) + float(sample.value)
    return MetricsSnapshot(samples=samples, taken_at=taken_at)


def metrics_url(endpoint: str) -> str:
    """``/metrics`` of an endpoint base URL (a full ``.../metrics`` URL is kept)."""
    url = endpoint.rstrip("/")
    return url if url.endswith("/metrics") else base_url(url) + "/metrics"


def scrape(url: str, timeout_s: float = 5.0) -> MetricsSnapshot:
    """Fetch and parse ``/metrics`` (blocking; call it from a thread inside a loop).

    Raises EndpointError naming the URL when it cannot be read or parsed.
    """
    target = metrics_url(url)
    try:
        with urllib.request.urlopen(target, timeout=timeout_s) as resp:
            text = resp.read().decode("utf-8", errors="replace")
    except (urllib.error.URLError, OSError) as err:
        raise EndpointError(f"{target}: cannot scrape metrics ({err})") from err
    try:
        return parse(text, taken_at=time.time())
    except ValueError as err:
        raise EndpointError(
            f"{target}: not Prometheus text format ({err}); expected a /metrics endpoint"
        ) from err


def acceptance(before: MetricsSnapshot, after: MetricsSnapshot) -> Acceptance | None:
    """Speculative decoding over the run, None when the server drafted nothing."""
    deltas = {}
    for name in (DRAFTS, DRAFT_TOKENS, ACCEPTED):
        start, end = before.get(name), after.get(name)
        if start is None or end is None:
            return None
        deltas[name] = end - start
    if deltas[DRAFTS] <= 0:
        return None
    return Acceptance(
        drafts=deltas[DRAFTS],
        draft_tokens=deltas[DRAFT_TOKENS],
        accepted_tokens=deltas[ACCEPTED],
        acceptance_length=1.0 + deltas[ACCEPTED] / deltas[DRAFTS],
    )
