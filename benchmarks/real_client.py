"""Our bench client against vLLM's own (``vllm bench serve``) on one real vLLM server.

The CPU recipe's job (``recipes/tiny/``: the tiny Qwen3 with n-gram speculation, real
acceptance) is started once with the local launcher. For each concurrency (1, 4, 16) the
same prompts (our random dataset, exact ISL under the model's tokenizer, written to a
file in vLLM's ShareGPT format: its ``custom`` format needs pandas, which the engine's
venv lacks) are sent by both clients. Both decode greedily (``--temperature 0``: vLLM's
client no longer does by default, and sampled outputs change how many n-gram drafts are
accepted).

Three things keep the comparison about the clients and not the host:
- the engine's prefix cache is emptied before every run (``POST /reset_prefix_cache``,
  served with ``VLLM_SERVER_DEV_MODE=1``): the same prompts sent a second time would
  otherwise skip their prefill and favour whichever client runs second;
- each concurrency is measured in ``--rounds`` rounds, the order of the clients reversed
  every other round, and the ratio is taken between the medians over rounds, so slow
  drift of the host favours neither;
- the engine and the clients run on disjoint halves of the host's cores (the engine's
  OpenMP threads bound to its half), so neither client's own CPU use slows the engine
  it measures.

Printed per metric: our value / vLLM's (target 1.00 +/- 0.03 on medians and
throughput), and the spread of the per-round ratios; under it, the same ratio between two
runs of vLLM's own client in the same rounds: the noise floor this host allows, which a
client comparison cannot beat. p99 TTFT is computed the same way
(numpy, linear) from both per-request TTFT lists, since our result withholds a p99 of
too few samples.

The same rounds run first against the simulator serving the same job (``inferx sim
serve``, steps scaled to the CPU engine's pace, one token per step): its step times are a
schedule on the clock, not a busy CPU, so what differs between the two clients there is
how they measure, not what the engine did. That table is where +/- 0.03 can be judged on
a small host; the vLLM table shows the same clients on a real engine, within its noise
floor. Under each concurrency, each client's mean TTFT less the engine's own (the
engine's TTFT histogram over the same requests), in ms: what the client itself adds
between its clock and the socket, which a ratio would hide.

Then, for ``ngram`` and ``draft_model`` (a second server, the tiny model drafting for
itself), the AL our result records against ``1 + accepted / drafts`` from the engine's
own ``/metrics`` counters scraped around the run: equal.

Run: ``.venv/bin/python benchmarks/real_client.py [--prompts-per-conc 8] [--rounds 3]
[--servers simulator vllm]`` (about 17 min on 2 cores, the simulator's table alone about
3; builds the vLLM venv and tiny model first if they are missing: scripts/cpu-host).
Numbers measured while other work loads the host mean little: the load average is
printed first.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from inferx_pipeline.bench.config import BenchConfig
from inferx_pipeline.bench.datasets import Draw, RandomSpec, Shard
from inferx_pipeline.bench.prometheus import ACCEPTED, DRAFTS, MetricsSnapshot, scrape
from inferx_pipeline.bench.result import RawResult
from inferx_pipeline.bench.runner import benchmark
from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.engines.sim import SimOptions
from inferx_pipeline.launch.base import Launcher
from inferx_pipeline.launch.local import LocalHost, load_local_host
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.select import Selection
from inferx_pipeline.plan.build import MatrixRequest, build_matrix
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.backends import local_backend, simulator_backend
from inferx_pipeline.tokens import load_tokenizer

ROOT = Path(__file__).resolve().parent.parent
RECIPE = "tiny-qwen3-bf16-cpu-vllm-ngram"
CONCURRENCIES = (1, 4, 16)
ISL, OSL = 128, 64
# The simulator predicts ~0.7 ms per decode step for the tiny model on the cpu SKU; x10 puts
# its steps at the real CPU engine's pace (~7-10 ms TPOT), where client overheads weigh
# what they weigh against the real engine.
SIM_TIME_SCALE = 10.0
SERVERS = ("simulator", "vllm")
TTFT_SUM = "vllm:time_to_first_token_seconds_sum"
TTFT_COUNT = "vllm:time_to_first_token_seconds_count"
ServerContext = AbstractContextManager[tuple[str, ServerSpec]]
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


def _halves() -> tuple[set[int], set[int]]:
    """The engine's cores and the clients' cores: disjoint halves of those we may use."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        return set(cores), set(cores)
    half = len(cores) // 2
    return set(cores[:half]), set(cores[half:])


@contextmanager
def _serving(
    launcher: Launcher, spec: ServerSpec, engine_cores: set[int] | None
) -> Iterator[tuple[str, ServerSpec]]:
    """``spec`` started by ``launcher`` on ``engine_cores``, healthy; stopped on exit."""
    ours = os.sched_getaffinity(0)
    if engine_cores is not None:
        os.sched_setaffinity(0, engine_cores)  # the engine inherits it at fork
    try:
        handle = launcher.start(spec)
    finally:
        os.sched_setaffinity(0, ours)
    try:
        handle.wait_healthy(spec.startup_timeout_s)
        yield handle.base_url, spec
    finally:
        handle.stop()


@contextmanager
def _server(
    host: LocalHost, job: BenchmarkJob, logs: Path, engine_cores: set[int] | None = None
) -> Iterator[tuple[str, ServerSpec]]:
    backend = local_backend(cached_catalog(Settings().catalog_dir), host, logs)
    spec = backend.specs(job)
    # Dev mode serves /reset_prefix_cache (see the docstring); benchmark-only.
    env = {**spec.env, "VLLM_SERVER_DEV_MODE": "1"}
    if engine_cores is not None:
        env["VLLM_CPU_OMP_THREADS_BIND"] = ",".join(map(str, sorted(engine_cores)))
    with _serving(backend.launcher, spec.model_copy(update={"env": env}), engine_cores) as up:
        yield up


@contextmanager
def _simulator(
    host: LocalHost, job: BenchmarkJob, logs: Path, engine_cores: set[int]
) -> Iterator[tuple[str, ServerSpec]]:
    """The simulator serving ``job``; prompts are counted with the real model's tokenizer."""
    catalog = cached_catalog(Settings().catalog_dir)
    real = local_backend(catalog, host, logs).specs(job).client
    # No acceptance draws: every step is one token (the n-gram engine's AL is ~1.06).
    # Seeded draws would give the two clients' requests different step counts.
    options = SimOptions(time_scale=SIM_TIME_SCALE, load_time_s=0.0, real_acceptance_fraction=0.0)
    backend = simulator_backend(catalog, logs, options)
    spec = backend.specs(job)
    client = spec.client.model_copy(update={"tokenizer": real.tokenizer})
    with _serving(backend.launcher, spec, engine_cores) as (url, _):
        yield url, spec.model_copy(update={"client": client})


def _reset_prefix_cache(url: str) -> None:
    request = urllib.request.Request(url.rstrip("/") + "/reset_prefix_cache", method="POST")
    with urllib.request.urlopen(request, timeout=30) as answer:
        if not json.loads(answer.read()).get("success"):
            raise RuntimeError(f"{url}: the engine did not reset its prefix cache")


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
    assert spec.client.tokenizer is not None  # a real model's: see _simulator
    model_dir = spec.client.tokenizer.parent  # tokenizer.json beside its config
    subprocess.run(
        [str(host.programs["vllm"].path), "bench", "serve", "--backend", "vllm",
         "--base-url", url, "--endpoint", "/v1/completions", "--model", spec.client.model_name,
         "--tokenizer", str(model_dir), "--dataset-name", "sharegpt", "--dataset-path",
         str(prompts), "--sharegpt-output-len", str(OSL), "--disable-shuffle",
         "--num-prompts", str(n), "--max-concurrency", str(conc),
         "--ignore-eos", "--temperature", "0", "--percentile-metrics", "ttft,tpot,itl,e2el",
         # No test request first: the engine's counters then cover the measured requests
         # only, and both clients start on cold connections.
         "--ready-check-timeout-sec", "0",
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


def _ratios(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[str]:
    """Per metric: median of ``a`` / median of ``b`` [range of the per-round ratios]."""
    cells = []
    for m in METRICS:
        xs, ys = [_value(x, m) for x in a], [_value(y, m) for y in b]
        per_round = [x / y for x, y in zip(xs, ys, strict=True)]
        ratio = float(np.median(xs) / np.median(ys))
        cells.append(f"{ratio:.3f} [{min(per_round):.2f}-{max(per_round):.2f}]")
    return cells


def _compare(
    host: LocalHost, job: BenchmarkJob, tmp: Path, per_conc: int, rounds: int, which: list[str]
) -> None:
    engine_cores, client_cores = _halves()
    print(f"engine on cores {sorted(engine_cores)}, clients on {sorted(client_cores)}")
    ours_before = os.sched_getaffinity(0)
    logs = tmp / "logs"
    # name -> (heading, server, whether to empty its prefix cache before each run)
    servers: dict[str, tuple[str, Callable[[], ServerContext], bool]] = {
        "simulator": (
            f"simulator (steps x{SIM_TIME_SCALE:g})",
            lambda: _simulator(host, job, logs, engine_cores),
            False,
        ),
        "vllm": ("vLLM", lambda: _server(host, job, logs, engine_cores), True),
    }
    for label, serve, reset in (servers[name] for name in which):
        print(f"\n{label}\n{'conc':>4}  {'':<11}" + "  ".join(f"{m:>18}" for m in METRICS))
        with serve() as (url, spec):
            os.sched_setaffinity(0, client_cores)  # vllm bench inherits it too
            warm = _prompts(spec, 4, 99, tmp / "warm.json")
            _ours(url, spec, warm, 4, 4, 99)  # first requests compile kernels; measure none
            for conc in CONCURRENCIES:
                _rounds(url, host, spec, tmp, conc, conc * per_conc, rounds, reset)
            os.sched_setaffinity(0, ours_before)


def _rounds(
    url: str,
    host: LocalHost,
    spec: ServerSpec,
    tmp: Path,
    conc: int,
    n: int,
    rounds: int,
    reset: bool,
) -> None:
    """``rounds`` runs of each client at ``conc``; prints both ratio rows and the TTFT
    each client adds over the engine's own."""
    prompts = tmp / f"prompts-c{conc}.json"
    dataset = _prompts(spec, n, conc, prompts)
    # vLLM's client twice per round: vllm / vllm' is the noise floor of this host.
    runs: dict[str, list[dict[str, Any]]] = {"ours": [], "vllm": [], "vllm'": []}
    # Per run: the client's mean TTFT less the engine's own (its TTFT histogram over the
    # same requests): what the client adds between its clock and the socket.
    added_ms: dict[str, list[float]] = {"ours": [], "vllm": [], "vllm'": []}
    for r in range(rounds):
        order = ("ours", "vllm", "vllm'") if r % 2 == 0 else ("vllm'", "vllm", "ours")
        for client in order:
            if reset:
                _reset_prefix_cache(url)
            before = scrape(url)
            if client == "ours":
                result = _ours(url, spec, dataset, conc, n, conc)
            else:
                result = _vllms(url, host, spec, prompts, conc, n)
            engine_ms = _engine_ttft_ms(before, scrape(url), n)
            runs[client].append(result)
            added_ms[client].append(float(result["mean_ttft_ms"]) - engine_ms)
    print(f"{conc:>4}  {'ours/vllm':<11}" + "  ".join(
        f"{c:>18}" for c in _ratios(runs["ours"], runs["vllm"])))  # fmt: skip
    print(f"{'':>4}  {'vllm/vllm':<11}" + "  ".join(
        f"{c:>18}" for c in _ratios(runs["vllm'"], runs["vllm"])))  # fmt: skip
    print(f"{'':>4}  TTFT mean ms over the engine's own: " + ", ".join(
        f"{k} {np.median(v):+.2f}" for k, v in added_ms.items()))  # fmt: skip


def _engine_ttft_ms(before: MetricsSnapshot, after: MetricsSnapshot, n: int) -> float:
    """The engine's mean TTFT over the ``n`` requests sent between two scrapes."""
    count = (after.get(TTFT_COUNT) or 0.0) - (before.get(TTFT_COUNT) or 0.0)
    if count != n:
        raise RuntimeError(f"the engine counted {count:g} first tokens for {n} requests")
    total = (after.get(TTFT_SUM) or 0.0) - (before.get(TTFT_SUM) or 0.0)
    return 1000.0 * total / count


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
    parser.add_argument("--prompts-per-conc", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--servers", nargs="+", choices=SERVERS, default=list(SERVERS),
        help="which comparisons to run (the AL check runs with vllm)",
    )  # fmt: skip
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="inferx-real-client-") as tmp:
        host = _host(Path(tmp))
        job = _job()
        print(f"our client / vllm bench serve on {RECIPE}, ISL {ISL}, OSL {OSL}; "
              f"load average {os.getloadavg()[0]:.2f}; ratio of medians over "
              f"{args.rounds} rounds [per-round range]")  # fmt: skip
        _compare(host, job, Path(tmp), args.prompts_per_conc, args.rounds, args.servers)
        if "vllm" in args.servers:
            _acceptance(host, job, Path(tmp))


if __name__ == "__main__":
    main()
