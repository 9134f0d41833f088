"""Our bench client against vLLM's own (``vllm bench serve``) on one real vLLM server.

The CPU recipe's job (``recipes/tiny/``: the tiny Qwen3 with n-gram speculation, real
acceptance) is started once with the local launcher. For each concurrency (1, 4, 16) the
same prompts (our random dataset, exact ISL under the model's tokenizer, written to a
file in vLLM's ShareGPT format: its ``custom`` format needs pandas, which the engine's
venv lacks) are sent by both clients, back to back, the order alternating per
concurrency so slow drift of the host favours neither. Both decode greedily
(``--temperature 0``: vLLM's client no longer does by default, and sampled outputs
change how many n-gram drafts are accepted). Printed per metric: our value / vLLM's
(target 1.00 +/- 0.03 on medians and throughput). p99 TTFT is computed the same way
(numpy, linear) from both per-request TTFT lists, since our
result withholds a p99 of too few samples.

Then, for ``ngram`` and ``draft_model`` (a second server, the tiny model drafting for
itself), the AL our result records against ``1 + accepted / drafts`` from the engine's
own ``/metrics`` counters scraped around the run: equal.

Run: ``.venv/bin/python benchmarks/real_client.py [--prompts-per-conc 4]`` (about 4 min on
2 cores; builds the vLLM venv and tiny model first if they are missing: scripts/cpu-host).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from inferx_pipeline.bench.config import BenchConfig
from inferx_pipeline.bench.datasets import Draw, RandomSpec, Shard
from inferx_pipeline.bench.prometheus import ACCEPTED, DRAFTS, MetricsSnapshot, scrape
from inferx_pipeline.bench.result import RawResult
from inferx_pipeline.bench.runner import benchmark
from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.launch.local import LocalHost, load_local_host
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.build import MatrixRequest, build_matrix
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.select import Selection
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.backends import local_backend
from inferx_pipeline.tokens import load_tokenizer

ROOT = Path(__file__).resolve().parent.parent
RECIPE = "tiny-qwen3-bf16-cpu-vllm-ngram"
CONCURRENCIES = (1, 4, 16)
ISL, OSL = 128, 64
METRICS = (
    "output_throughput", "request_throughput", "median_ttft_ms", "p99_ttft_ms",
    "median_tpot_ms", "median_itl_ms", "median_e2el_ms",
)  # fmt: skip


def _host(tmp: Path) -> LocalHost:
    path = tmp / "local-host.yaml"
    subprocess.run([str(ROOT / "scripts" / "cpu-host"), str(path)], check=True)
    return load_local_host(path)


def _job() -> BenchmarkJob:
    request = MatrixRequest(paths=(), selection=Selection(recipes=(RECIPE,)))
    return build_matrix(request, Settings())[0]


@contextmanager
def _server(host: LocalHost, job: BenchmarkJob, logs: Path) -> Iterator[tuple[str, ServerSpec]]:
    backend = local_backend(cached_catalog(Settings().catalog_dir), host, logs)
    spec = backend.specs(job)
    handle = backend.launcher.start(spec)
    try:
        handle.wait_healthy(spec.startup_timeout_s)
        yield handle.base_url, spec
    finally:
        handle.stop()


def _prompts(spec: ServerSpec, n: int, seed: int, out: Path) -> RandomSpec:
    dataset = RandomSpec(input_len=ISL, output_len=OSL)
    plan = dataset.plan(Draw(n, 0, seed), load_tokenizer(spec.client.tokenizer), Shard(0, 1))
    # vLLM's ShareGPT format: the first turn is the prompt, sent as is (no chat template).
    rows = [
        {"conversations": [{"from": "human", "value": r.prompt}, {"from": "gpt", "value": ""}]}
        for r in plan.requests
    ]
    out.write_text(json.dumps(rows))
    return dataset


def _ours(
    url: str, spec: ServerSpec, dataset: RandomSpec, conc: int, n: int, seed: int
) -> dict[str, Any]:
    config = BenchConfig(
        endpoint=url, model=spec.client.model_name, api="completions", dataset=dataset,
        concurrency=conc, num_prompts=n, seed=seed, tokenizer=spec.client.tokenizer,
    )  # fmt: skip
    return benchmark(config).model_dump(by_alias=True)


def _vllms(
    url: str, host: LocalHost, spec: ServerSpec, prompts: Path, conc: int, n: int
) -> dict[str, Any]:
    out = prompts.with_suffix(f".c{conc}.vllm.json")
    model_dir = host.models.models[spec.client.model_name]
    subprocess.run(
        [str(host.programs["vllm"].path), "bench", "serve", "--backend", "vllm",
         "--base-url", url, "--endpoint", "/v1/completions", "--model", spec.client.model_name,
         "--tokenizer", str(model_dir), "--dataset-name", "sharegpt", "--dataset-path",
         str(prompts), "--sharegpt-output-len", str(OSL), "--disable-shuffle",
         "--num-prompts", str(n), "--max-concurrency", str(conc),
         "--ignore-eos", "--temperature", "0", "--percentile-metrics", "ttft,tpot,itl,e2el",
         "--metric-percentiles", "50,99", "--save-result", "--save-detailed",
         "--result-dir", str(out.parent), "--result-filename", out.name],
        check=True, capture_output=True,
    )  # fmt: skip
    found: dict[str, Any] = json.loads(out.read_text())
    return found


def _value(result: dict[str, Any], metric: str) -> float:
    if metric == "p99_ttft_ms":  # the same estimator on both sides (see the docstring)
        return float(np.percentile(np.asarray(result["ttfts"]) * 1000.0, 99))
    return float(result[metric])


def _compare(host: LocalHost, job: BenchmarkJob, tmp: Path, per_conc: int) -> None:
    print(f"{'conc':>4}  " + "  ".join(f"{m:>18}" for m in METRICS))
    with _server(host, job, tmp / "logs") as (url, spec):
        warm = _prompts(spec, 4, 99, tmp / "warm.json")
        _ours(url, spec, warm, 4, 4, 99)  # first requests compile kernels; measure none
        for i, conc in enumerate(CONCURRENCIES):
            n = conc * per_conc
            prompts = tmp / f"prompts-c{conc}.json"
            dataset = _prompts(spec, n, conc, prompts)
            if i % 2 == 0:
                ours = _ours(url, spec, dataset, conc, n, conc)
                vllms = _vllms(url, host, spec, prompts, conc, n)
            else:
                vllms = _vllms(url, host, spec, prompts, conc, n)
                ours = _ours(url, spec, dataset, conc, n, conc)
            ratios = [_value(ours, m) / _value(vllms, m) for m in METRICS]
            print(f"{conc:>4}  " + "  ".join(f"{r:>18.3f}" for r in ratios))


def _counter_al(before: MetricsSnapshot, after: MetricsSnapshot) -> float:
    drafts = (after.get(DRAFTS) or 0.0) - (before.get(DRAFTS) or 0.0)
    accepted = (after.get(ACCEPTED) or 0.0) - (before.get(ACCEPTED) or 0.0)
    return 1.0 + accepted / drafts


def _acceptance(host: LocalHost, job: BenchmarkJob, tmp: Path) -> None:
    # The draft checkpoint by its folder: the store resolves only the served model's id.
    folder = str(host.models.models[job.model.hf_id])
    draft = job.spec.model_copy(update={"method": "draft_model", "arm": "draft_model",
                                        "draft_model": folder, "options": {}})  # fmt: skip
    for name, variant in (("ngram", job), ("draft_model", job.evolve(spec=draft))):
        with _server(host, variant, tmp / "logs") as (url, spec):
            dataset = _prompts(spec, 8, 7, tmp / f"al-{name}.json")
            before = scrape(url)
            raw = RawResult.model_validate(_ours(url, spec, dataset, 4, 8, 7))
            after = scrape(url)
            ours = raw.acceptance.acceptance_length if raw.acceptance else float("nan")
            counters = _counter_al(before, after)
            print(f"AL {name:<12} ours {ours:.4f}  counters {counters:.4f}  "
                  f"ratio {ours / counters:.4f}")  # fmt: skip


def main() -> None:
    """Parse flags, then print the ratio table and the AL comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts-per-conc", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="inferx-real-client-") as tmp:
        host = _host(Path(tmp))
        job = _job()
        print(f"our client / vllm bench serve on {RECIPE}, ISL {ISL}, OSL {OSL}")
        _compare(host, job, Path(tmp), args.prompts_per_conc)
        _acceptance(host, job, Path(tmp))


if __name__ == "__main__":
    main()
