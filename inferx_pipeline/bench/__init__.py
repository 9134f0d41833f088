"""The HTTP benchmark client: vllm bench serve's metrics against any OpenAI-compatible endpoint.

Entry points (import from their modules; this package imports nothing eagerly so that
reading a ``RawResult`` does not pull in aiohttp):

- ``inferx_pipeline.bench.config.BenchConfig`` — one load point, validated.
- ``inferx_pipeline.bench.runner.run_benchmark(config)`` (async) and
  ``inferx_pipeline.bench.runner.benchmark(config)`` (sync, uvloop) -> ``RawResult``.
- ``inferx_pipeline.bench.result.RawResult`` — the JSON artifact contract.
- ``inferx_pipeline.bench.prometheus.scrape(url)`` -> ``MetricsSnapshot``.
- ``inferx_pipeline.bench.fake.FakeSender`` — the HTTP stand-in for tests.
"""
