"""Golden argv: the exact server argv and env of every job of the four seed recipes.

A change to an engine adapter (or a seed recipe) shows up as a reviewable diff of
``tests/engines/golden/<recipe>.json``. Regenerate on purpose, never silently:
``INFERX_UPDATE_GOLDEN=1 .venv/bin/pytest tests/engines/test_golden_argv.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.engines.base import adapter_for
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.plan.build import MatrixRequest, build_matrix
from inferx_pipeline.settings import Settings

GOLDEN_DIR = Path(__file__).with_name("golden")
UPDATE_ENV = "INFERX_UPDATE_GOLDEN"
SEEDS = {
    "qwen3.827b-bf16-mi325x-vllm-mtp": "qwen3.8-27b/qwen3.827b-bf16-mi325x-vllm-mtp.yaml",
    "qwen3.5-fp8-mi300x-sglang-agentic-mtp": "qwen3.5/qwen3.5-fp8-mi300x-sglang-agentic-mtp.yaml",
    "qwen3.827b-fp8-h200-vllm-mtp": "qwen3.8-27b/qwen3.827b-fp8-h200-vllm-mtp.yaml",
    "minimaxm3-fp8-mi325x-vllm-agentic-mtp": "minimaxm3/minimaxm3-fp8-mi325x-vllm-agentic-mtp.yaml",
}


def _jobs(recipe_file: str) -> list[BenchmarkJob]:
    settings = Settings()
    return build_matrix(MatrixRequest(paths=(settings.recipes_dir / recipe_file,)), settings)


def _rendered(jobs: list[BenchmarkJob]) -> list[dict[str, Any]]:
    catalog = cached_catalog(Settings().catalog_dir)
    out = []
    for job in jobs:
        spec = adapter_for(job).server_spec(job, sku=catalog.sku(job.sku))
        out.append(
            {
                "job_id": job.job_id,
                "image": spec.image,
                "argv": list(spec.argv),
                "env": spec.env,
                "gpus": spec.gpus.model_dump(),
            }
        )
    return out


@pytest.mark.parametrize("recipe_id", sorted(SEEDS))
def test_seed_argv_matches_golden(recipe_id: str) -> None:
    rendered = _rendered(_jobs(SEEDS[recipe_id]))
    path = GOLDEN_DIR / f"{recipe_id}.json"
    text = json.dumps(rendered, indent=2, sort_keys=True) + "\n"
    if os.environ.get(UPDATE_ENV) == "1":
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} missing; generate it with {UPDATE_ENV}=1 and review the diff"
    expected = json.loads(path.read_text(encoding="utf-8"))
    assert rendered == expected, f"argv of {recipe_id} changed; review, then {UPDATE_ENV}=1"
