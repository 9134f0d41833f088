"""One point on a running server: the client config, ``/metrics`` around it, provenance.

The RawResult's ``metadata`` carries the job identity under the results layer's
``JobIdentity`` field names plus ``run_id``, ``attempt`` and ``simulated``, so
``inferx results ingest`` needs no flags for a sweep's artifacts.
"""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass

from inferx_pipeline.bench.agentic import AgenticSpec
from inferx_pipeline.bench.config import BenchConfig, DatasetSpec
from inferx_pipeline.bench.datasets import RandomSpec
from inferx_pipeline.bench.prometheus import MetricsSnapshot, scrape
from inferx_pipeline.bench.result import MetadataValue, RawResult
from inferx_pipeline.bench.runner import benchmark
from inferx_pipeline.engines.multinode import deployment_fields
from inferx_pipeline.errors import EndpointError
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.sweep.report import SweepOptions

KV_USAGE = "vllm:kv_cache_usage_perc"
PREEMPTIONS = "vllm:num_preemptions_total"


def dataset_for(job: BenchmarkJob, options: SweepOptions) -> DatasetSpec:
    """Random exact-length prompts for fixed-seq-len; trace replay for agentic-coding."""
    if job.isl is not None and job.osl is not None:
        return RandomSpec(input_len=job.isl, output_len=job.osl)
    trace = {"trace": job.trace} if job.trace else {}
    return AgenticSpec(
        think_time_scale=options.think_time_scale, max_turns=options.max_turns, **trace
    )


def bench_config(
    job: BenchmarkJob,
    spec: ServerSpec,
    base_url: str,
    options: SweepOptions,
    metadata: dict[str, MetadataValue],
    min_duration_s: float,
) -> BenchConfig:
    """The client run measuring ``job`` against the server at ``base_url``, for at least
    ``min_duration_s`` (the validity rules' minimum) as well as the planned prompts."""
    return BenchConfig(
        endpoint=base_url,
        model=spec.client.model_name,
        api=spec.client.api,
        dataset=dataset_for(job, options),
        concurrency=job.conc,
        prompts_per_conc=options.prompts_per_conc,
        num_prompts=options.num_prompts,
        min_duration_s=min_duration_s,
        deadline_s=options.point_deadline_s,
        seed=options.seed,
        chat_template_kwargs=dict(spec.client.chat_template_kwargs),
        idle_timeout_s=options.request_timeout_s,
        tokenizer=spec.client.tokenizer,
        metadata=metadata,
    )


def warmup_config(job: BenchmarkJob, spec: ServerSpec, base_url: str, n: int) -> BenchConfig:
    """A short unrecorded run of ``n`` requests that wakes a fresh server (caches, graphs)."""
    dataset = RandomSpec(input_len=job.isl or 128, output_len=min(job.osl or 16, 16))
    return BenchConfig(
        endpoint=base_url,
        model=spec.client.model_name,
        api=spec.client.api,
        dataset=dataset,
        concurrency=min(n, job.conc),
        num_prompts=n,
        chat_template_kwargs=dict(spec.client.chat_template_kwargs),
        tokenizer=spec.client.tokenizer,
        scrape_metrics=False,
    )


def job_metadata(
    job: BenchmarkJob,
    *,
    vendor: str,
    image_digest: str,
    run_id: str,
    attempt: int,
    simulated: bool,
    engine_version: str | None = None,
) -> dict[str, MetadataValue]:
    """Identity and provenance of one attempt, as RawResult metadata (no secrets, no None).

    ``engine_version`` is what the image preflight read (None when not run or unknown).
    """
    p = job.parallel
    values: dict[str, MetadataValue | None] = {
        "recipe_id": job.recipe_id,
        "fingerprint": job.fingerprint,
        "job_id": job.job_id,
        "model": job.model.hf_id,
        "model_family": job.model.family,
        "precision": job.model.precision,
        "sku": job.sku,
        "vendor": vendor,
        "framework": job.engine.framework,
        "image": job.engine.image,
        "image_digest": image_digest,
        "engine_version": engine_version,
        "scenario": job.scenario,
        "isl": job.isl,
        "osl": job.osl,
        "tp": p.tp if p else None,
        "ep": p.ep if p else None,
        "pp": p.pp if p else None,
        "pcp": p.pcp_size if p else None,
        "dp_attn": p.dp_attn if p else None,
        "kv_offload": job.kv_offloading or "none",
        "kv_offload_backend": job.kv_offload_backend.name if job.kv_offload_backend else None,
        "spec_method": job.spec.method,
        "draft_tokens": job.spec.draft_tokens or 0,
        "acceptance_mode": job.spec.acceptance,
        "target_al": job.spec.target_al,
        "thinking": job.model.thinking or "none",
        "conc": job.conc,
        "run_id": run_id,
        "attempt": attempt,
        "simulated": simulated,
        **deployment_fields(job),
    }
    return {k: v for k, v in values.items() if v is not None}


def snapshot(base_url: str) -> MetricsSnapshot | None:
    """``/metrics`` now, None when the server has none (or is gone)."""
    try:
        return scrape(base_url)
    except EndpointError:
        return None


def served_version(base_url: str) -> str | None:
    """The version the running engine reports at ``GET /version``; None when it has none."""
    try:
        with urllib.request.urlopen(base_url.rstrip("/") + "/version", timeout=5) as answer:
            value = json.load(answer).get("version")
    except (OSError, ValueError, AttributeError):  # refused, not JSON, not an object
        return None
    return value if isinstance(value, str) and value else None


def server_facts(
    before: MetricsSnapshot | None, after: MetricsSnapshot | None
) -> dict[str, MetadataValue]:
    """Server-side facts of the point: preemptions during it, KV usage at its end."""
    facts: dict[str, MetadataValue] = {}
    if after is None:
        return facts
    usage = after.get(KV_USAGE)
    if usage is not None:
        facts["server_kv_cache_usage_end"] = usage
    end, start = after.get(PREEMPTIONS), before.get(PREEMPTIONS) if before else None
    if end is not None and start is not None:
        facts["server_preemptions"] = end - start
    return facts


@dataclass(frozen=True)
class Measured:
    """A point's result with the ``/metrics`` snapshots taken around it."""

    result: RawResult
    before: MetricsSnapshot | None
    after: MetricsSnapshot | None


def measure(config: BenchConfig) -> Measured:
    """Run the client once, snapshotting ``/metrics`` before and after (never raises for
    what the endpoint does; see ``bench.runner``)."""
    before = snapshot(config.endpoint)
    result = benchmark(config)
    after = snapshot(config.endpoint)
    metadata = {**result.metadata, **server_facts(before, after)}
    return Measured(result.model_copy(update={"metadata": metadata}), before, after)
