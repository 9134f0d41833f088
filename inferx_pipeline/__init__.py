"""inferx-pipeline: continuous LLM-inference benchmarking as Dagster software-defined assets."""

__version__ = "0.1.0"
