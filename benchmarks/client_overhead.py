"""How much the bench client distorts what it measures, against the simulator.

For concurrency 16, 64 and 256 it starts ``inferx sim serve`` in its own process (so
the client's CPU is its own), runs the client closed-loop, and prints measured /
intended for mean ITL and TPOT, the intended values coming from the simulator's
virtual-time prediction of the same closed loop (no HTTP, no sleeping), plus the
client's CPU microseconds per streamed chunk and its event-loop lag. ``itl/srv`` divides
by the simulator's own wall-clock ITL (``/metrics``): near 1 while ``itl/int`` is not
means the simulator process, not the client, ran late (a loaded machine).

Targets (issue 3): ratio 1.00 +/- 0.01 at concurrency 64; < 15 us CPU per chunk.
Run: ``.venv/bin/python benchmarks/client_overhead.py [--osl 128] [--prompts-per-conc 4]``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from inferx_pipeline.bench.config import BenchConfig
from inferx_pipeline.bench.datasets import RandomSpec
from inferx_pipeline.bench.prometheus import scrape
from inferx_pipeline.bench.runner import benchmark
from inferx_pipeline.settings import Settings
from inferx_pipeline.sim.config import SimConfig
from inferx_pipeline.sim.predict import predict

ITL = "vllm:inter_token_latency_seconds"
SIM = {"sku": "h100", "model_family": "qwen3.8-27b", "max_model_len": 4096}
READY_TIMEOUT_S = 60.0


@contextmanager
def sim_server() -> Iterator[str]:
    """A simulator subprocess on a free loopback port; yields its base URL."""
    argv = [sys.executable, "-c", "from inferx_pipeline.cli import main; main()", "sim", "serve",
            "--load-time-s", "0"]  # fmt: skip
    for key, value in SIM.items():
        argv += [f"--{key.replace('_', '-')}", str(value)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("INFERX_SIM_LISTENING "):
                yield line.split()[1]
                break
            if time.monotonic() > deadline:
                raise RuntimeError("simulator did not announce its port in time")
        else:
            raise RuntimeError(f"simulator exited with {proc.wait()}")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def one_point(conc: int, isl: int, osl: int, per_conc: int) -> str:
    """Measure one concurrency and format its line."""
    with sim_server() as url:
        result = benchmark(
            BenchConfig(
                endpoint=url,
                model=SIM["model_family"],
                concurrency=conc,
                prompts_per_conc=per_conc,
                dataset=RandomSpec(input_len=isl, output_len=osl),
            )
        )
        seen = scrape(url)
    # The server's own wall-clock ITL: separates a late simulator from a late client.
    server_itl = 1000 * (seen.get(ITL + "_sum") or 0.0) / (seen.get(ITL + "_count") or 1.0)
    config = SimConfig(catalog_dir=Settings().catalog_dir, load_time_s=0, **SIM)  # type: ignore[arg-type]  # SIM mixes str and int fields
    intended = predict(config, isl, osl, [conc], per_conc)[0].mean_tpot_ms
    chunks = sum(len(itls) + 1 for itls, err in zip(result.itls, result.errors, strict=True)
                 if not err)  # fmt: skip
    cpu_us = result.client.cpu_percent / 100 * result.duration / max(chunks, 1) * 1e6
    itl, tpot = result.mean_itl_ms or 0.0, result.mean_tpot_ms or 0.0
    return (
        f"{conc:>5} {result.completed:>6} {chunks:>8} {intended:>9.3f} {itl:>9.3f} {tpot:>9.3f} "
        f"{itl / intended:>8.4f} {tpot / intended:>8.4f} {itl / server_itl:>8.4f} {cpu_us:>8.2f} "
        f"{result.client.event_loop_lag_p99_ms:>7.2f} {result.client.cpu_percent:>5.0f}"
    )


def main() -> None:
    """Print one line per concurrency."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--isl", type=int, default=128)
    parser.add_argument("--osl", type=int, default=128)
    parser.add_argument("--prompts-per-conc", type=int, default=4)
    parser.add_argument("--concurrency", default="16,64,256")
    args = parser.parse_args()
    print(f"sim {SIM}, isl {args.isl}, osl {args.osl}, {args.prompts_per_conc} prompts/conc")
    print(" conc   reqs   chunks  int_ms    itl_ms   tpot_ms  itl/int tpot/int itl/srv us/chunk "
          "lag_p99  cpu%")  # fmt: skip
    for conc in (int(c) for c in args.concurrency.split(",")):
        print(one_point(conc, args.isl, args.osl, args.prompts_per_conc), flush=True)


if __name__ == "__main__":
    main()
