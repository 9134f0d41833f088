"""The CPU recipe through the Docker launcher on the real vLLM image.

The same recipe as ``test_real_vllm.py``, now as a container of ``inferx/vllm-cpu`` (built
by ``tests/services/vllm_image.py``) with the tiny model mounted read-only from the pool's
model store: the image preflight reads the engine version from the image, the client
measures with the model's own tokenizer, and nothing is left running.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from inferx_pipeline.bench.result import RawResult
from inferx_pipeline.cli import cli
from inferx_pipeline.launch.docker_args import LABEL_RUN
from inferx_pipeline.sweep.artifacts import RESULT, SERVER_SPEC, ArtifactStore
from tests.e2e.test_real_vllm import ISL, RECIPE_FILE
from tests.services.docker_engine import DockerEngine
from tests.services.vllm import TINY_MODEL, TINY_RECIPE, CpuHost
from tests.smoke import smoke_root
from tests.sweep.test_docker_sweep import MEMLOCK

pytestmark = [pytest.mark.vllm, pytest.mark.docker]


def _pools(tmp: Path, engine: DockerEngine, model_dir: Path) -> Path:
    path = tmp / "runner-pools.yaml"
    path.write_text(
        "source: test inventory (the private dockerd, the tiny model)\npools:\n"
        "  cpu:\n    skus: [cpu]\n"
        f"    docker: {{pull: never, grace_s: 5, shm_size: 1g, memlock_bytes: {MEMLOCK},\n"
        f"             models: {{{TINY_MODEL}: {model_dir}}}}}\n"
        f"    hosts: [{{url: '{engine.url}'}}]\n"
    )
    return path


def test_cpu_recipe_runs_on_the_real_vllm_image(
    docker_engine: DockerEngine, vllm_cpu_image: str, cpu_host: CpuHost, tmp_path: Path
) -> None:
    root = smoke_root(tmp_path / "root", [RECIPE_FILE], saturation=True)
    env = {"INFERX_ROOT": str(root), "INFERX_STATE_DIR": str(tmp_path / "state"),
           "DOCKER_HOST": "unix:///nonexistent/docker.sock", "COLUMNS": "200"}  # fmt: skip
    art = tmp_path / "art"
    args = ["sweep", "--launcher", "docker", "--pools", str(_pools(tmp_path, docker_engine,
            cpu_host.model_dir)), "--recipe", TINY_RECIPE, "--artifacts-dir", str(art),
            "--num-prompts", "8"]  # fmt: skip
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 0, result.output
    assert result.output.rstrip().endswith("2 jobs: 2 ok"), result.output

    store = ArtifactStore(art)
    image_id = docker_engine.client.images.get(vllm_cpu_image).id
    for manifest in store.all_attempts():
        raw = RawResult.model_validate_json(store.read(manifest.artifacts[RESULT]))
        assert raw.valid, raw.invalid_reasons
        assert raw.tokenizer_id == str(cpu_host.model_dir / "tokenizer.json")
        assert raw.total_input_tokens == ISL * raw.completed
        meta = raw.metadata
        assert meta["simulated"] is False and meta["image_digest"] == image_id
        assert meta["engine_version"] == "0.32.0"
        spec = json.loads(store.read(manifest.artifacts[SERVER_SPEC]))
        assert spec["image"] == vllm_cpu_image
    left = docker_engine.client.containers.list(all=True, filters={"label": LABEL_RUN})
    assert left == [], "every engine container is removed"
