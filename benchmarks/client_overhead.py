"""How much the bench client distorts what it measures, against the simulator.

For each concurrency it starts ``inferx sim serve`` in its own process (so the client's
CPU is its own), runs the bench client closed-loop, then a minimal raw-protocol reader
of the same stream on the same server (the floor of what Python can do), and prints:

- ``itl/int``, ``tpot/int``: client-measured mean ITL and TPOT over the *intended* ones.
  Intended = the simulator's own schedule: the absolute deadline of the step that
  produced each chunk (``inferx_sim:intended_*`` in ``/metrics``), for the batches it
  actually ran. 1.00 means the client timed exactly what the simulator meant to send.
- ``srv/int``: the simulator's wall-clock ITL over intended (the server's own lateness);
  ``late_ms``: mean / p99 of how late the server woke for a step.
- ``pred/int``: ``sim.predict``'s virtual closed-loop TPOT over intended: how far the
  offline model's batch schedule is from the real loop's (not a client error).
- ``us/chunk``: client CPU microseconds per streamed chunk (sharded: the worst shard's
  CPU share x processes); ``lag``: client event-loop lag p99, ms.
- ``raw`` columns: the floor reader's ITL ratio and CPU per chunk; ``cpu/raw`` = client
  CPU over the floor's.

Targets (issue 3): ratio 1.00 +/- 0.01 at concurrency 64; < 15 us CPU per chunk.
Run: ``.venv/bin/python benchmarks/client_overhead.py [--osl 128] [--prompts-per-conc 2]``
(about 80 s; 256 is measured with one client process and sharded over two).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit

import orjson
import uvloop
from prometheus_client.parser import text_string_to_metric_families

from inferx_pipeline.bench.config import BenchConfig
from inferx_pipeline.bench.datasets import RandomSpec
from inferx_pipeline.bench.runner import benchmark
from inferx_pipeline.settings import Settings
from inferx_pipeline.sim.config import SimConfig
from inferx_pipeline.sim.predict import predict

SIM = {"sku": "h100", "model_family": "qwen3.8-27b", "max_model_len": 4096}
READY_TIMEOUT_S = 60.0
INT_ITL = "inferx_sim:intended_inter_token_latency_seconds"
INT_TPOT = "inferx_sim:intended_time_per_output_token_seconds"
SRV_ITL = "vllm:inter_token_latency_seconds"
LATENESS = "inferx_sim:step_lateness_seconds"


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


class Metrics:
    """One ``/metrics`` scrape: plain samples by name, histogram buckets by ``le``."""

    def __init__(self, url: str) -> None:
        with urllib.request.urlopen(url + "/metrics", timeout=5) as resp:
            text = resp.read().decode()
        self.samples: dict[str, float] = {}
        self.buckets: dict[str, list[tuple[float, float]]] = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                if s.name.endswith("_bucket"):
                    bound = (float(s.labels["le"]), s.value)
                    self.buckets.setdefault(s.name, []).append(bound)
                else:
                    self.samples[s.name] = s.value

    def mean(self, before: Metrics, name: str) -> float:
        """Mean of a summary/histogram over the interval since ``before``, seconds."""
        count = self.samples[name + "_count"] - before.samples[name + "_count"]
        return (self.samples[name + "_sum"] - before.samples[name + "_sum"]) / max(count, 1)

    def p99(self, before: Metrics, name: str) -> float:
        """The histogram bucket bound holding the interval's 99th percentile, seconds."""
        pairs = zip(self.buckets[name + "_bucket"], before.buckets[name + "_bucket"], strict=True)
        deltas = [(le, now - then) for (le, now), (_, then) in pairs]
        total = deltas[-1][1]
        return next(le for le, cum in deltas if cum >= 0.99 * total)


@dataclass
class Floor:
    """What the raw reader measured: mean ITL and TPOT (s) and CPU seconds per chunk."""

    mean_itl_s: float
    mean_tpot_s: float
    cpu_per_chunk_s: float


class RawStream(asyncio.Protocol):
    """The floor: stamps each read, counts token events in it, and does nothing else."""

    def __init__(self) -> None:
        self.stamps: list[int] = []
        self.done: asyncio.Future[None] | None = None

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter_ns()
        self.stamps += [now] * data.count(b'"choices":[{')
        if b"data: [DONE]" in data and self.done is not None:
            self.done.set_result(None)


async def raw_floor(url: str, conc: int, requests: int, isl: int, osl: int) -> Floor:
    """Closed loop of hand-written HTTP/1.1 requests, one keep-alive connection each."""
    loop, parts = asyncio.get_running_loop(), urlsplit(url)
    body = orjson.dumps({"model": SIM["model_family"], "max_tokens": osl, "ignore_eos": True,
                         "prompt": " ".join(f"t{i}" for i in range(1, isl + 1)), "stream": True,
                         "stream_options": {"include_usage": True}})  # fmt: skip
    head = f"POST /v1/completions HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: "
    wire = f"{head}application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body
    left, streams = iter(range(requests)), []
    host, port = parts.hostname or "127.0.0.1", parts.port or 80

    async def worker() -> None:
        transport, proto = await loop.create_connection(RawStream, host, port)
        for _ in left:
            proto.stamps, proto.done = [], loop.create_future()
            transport.write(wire)
            await proto.done
            streams.append(proto.stamps)
        transport.close()

    cpu0 = time.process_time()
    await asyncio.gather(*[worker() for _ in range(conc)])
    cpu = time.process_time() - cpu0
    gaps = [(s[-1] - s[0]) / 1e9 for s in streams]
    return Floor(
        mean_itl_s=sum(gaps) / sum(len(s) - 1 for s in streams),
        mean_tpot_s=sum(g / (len(s) - 1) for g, s in zip(gaps, streams, strict=True)) / len(gaps),
        cpu_per_chunk_s=cpu / sum(len(s) for s in streams),
    )


def client_line(url: str, conc: int, procs: int, args: argparse.Namespace) -> tuple[str, float]:
    """Run the bench client once and format its columns (intended from the simulator)."""
    before = Metrics(url)
    result = benchmark(
        BenchConfig(
            endpoint=url,
            model=SIM["model_family"],
            concurrency=conc,
            prompts_per_conc=args.prompts_per_conc,
            processes=procs,
            dataset=RandomSpec(input_len=args.isl, output_len=args.osl),
        )
    )
    after = Metrics(url)
    int_itl, int_tpot = after.mean(before, INT_ITL), after.mean(before, INT_TPOT)
    chunks = sum(len(itls) + 1 for itls, err in zip(result.itls, result.errors, strict=True)
                 if not err)  # fmt: skip
    cpu_s = result.client.cpu_percent / 100 * procs * result.duration
    config = SimConfig(catalog_dir=Settings().catalog_dir, load_time_s=0, **SIM)
    pred = predict(config, args.isl, args.osl, [conc], args.prompts_per_conc)[0].mean_tpot_ms
    itl, tpot = (result.mean_itl_ms or 0.0) / 1e3, (result.mean_tpot_ms or 0.0) / 1e3
    late = f"{1e3 * after.mean(before, LATENESS):.2f}/{1e3 * after.p99(before, LATENESS):.1f}"
    return (
        f"{conc:>5} {procs:>5} {chunks:>7} {1e3 * int_itl:>7.2f} {itl / int_itl:>7.4f} "
        f"{tpot / int_tpot:>8.4f} {after.mean(before, SRV_ITL) / int_itl:>7.4f} {late:>9} "
        f"{pred / 1e3 / int_tpot:>8.3f} {1e6 * cpu_s / max(chunks, 1):>8.2f} "
        f"{result.client.event_loop_lag_p99_ms:>6.2f}"
    ), 1e6 * cpu_s / max(chunks, 1)


def floor_columns(url: str, conc: int, args: argparse.Namespace, client_us: float) -> str:
    """Run the raw reader on the same server and format its columns."""
    before = Metrics(url)
    requests = conc * args.prompts_per_conc
    floor = uvloop.run(raw_floor(url, conc, requests, args.isl, args.osl))
    after = Metrics(url)
    int_itl = after.mean(before, INT_ITL)
    raw_us = 1e6 * floor.cpu_per_chunk_s
    return f"{floor.mean_itl_s / int_itl:>8.4f} {raw_us:>7.2f} {client_us / raw_us:>7.2f}"


def main() -> None:
    """Print one line per concurrency (and per process count at the sharded one)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--isl", type=int, default=128)
    parser.add_argument("--osl", type=int, default=128)
    parser.add_argument("--prompts-per-conc", type=int, default=2)
    parser.add_argument("--concurrency", default="16,64,256")
    parser.add_argument("--sharded-at", type=int, default=256, help="Also run 2 processes here.")
    args = parser.parse_args()
    print(f"sim {SIM}, isl {args.isl}, osl {args.osl}, {args.prompts_per_conc} prompts/conc")
    print(" conc procs  chunks  int_ms itl/int tpot/int srv/int   late_ms pred/int us/chunk "
          "   lag raw/int  raw_us cpu/raw")  # fmt: skip
    for conc in (int(c) for c in args.concurrency.split(",")):
        with sim_server() as url:
            line, client_us = client_line(url, conc, 1, args)
            print(f"{line} {floor_columns(url, conc, args, client_us)}", flush=True)
            if conc == args.sharded_at:
                line, _ = client_line(url, conc, 2, args)
                print(line, flush=True)


if __name__ == "__main__":
    main()
