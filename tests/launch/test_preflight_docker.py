"""Image preflight against real images: facts read from the base image, cached by digest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferx_pipeline.errors import PreflightError
from inferx_pipeline.launch.docker_probe import DockerProbeRunner
from inferx_pipeline.launch.preflight import (
    FactCache,
    FactRule,
    default_probes,
    preflight,
    version_tuple,
)
from tests.services.docker_engine import DockerEngine

pytestmark = pytest.mark.docker


class CountingRunner:
    """Wraps the real runner and counts the probe containers it starts."""

    def __init__(self, inner: DockerProbeRunner) -> None:
        self.inner = inner
        self.runs = 0

    def digest(self, image: str) -> str:
        return self.inner.digest(image)

    def run(self, image: str, argv: tuple[str, ...], timeout_s: float) -> tuple[int, str]:
        self.runs += 1
        return self.inner.run(image, argv, timeout_s)


def test_reads_python_version_and_caches_by_digest(
    docker_engine: DockerEngine, base_image: str, tmp_path: Path
) -> None:
    cache = FactCache(tmp_path / "image-facts.json")
    probes = default_probes().for_engine("vllm")
    first = CountingRunner(DockerProbeRunner(docker_engine.client, pull="never"))
    facts = preflight(base_image, probes, first, cache)
    assert facts.python_version == "3.11.2"
    assert facts.engine_version is None  # no vllm in the base image: unknown, not an error
    assert first.runs == 2
    assert facts.digest == docker_engine.client.images.get(base_image).id
    assert set(json.loads(cache.path.read_text())) == {facts.digest}

    again = CountingRunner(DockerProbeRunner(docker_engine.client, pull="never"))
    assert preflight(base_image, probes, again, cache) == facts
    assert again.runs == 0


def test_sim_image_reports_the_project_version(
    docker_engine: DockerEngine, sim_image: str, tmp_path: Path
) -> None:
    runner = DockerProbeRunner(docker_engine.client, pull="never")
    facts = preflight(
        sim_image, default_probes().for_engine("sim"), runner, FactCache(tmp_path / "f.json")
    )
    assert facts.engine_version == "0.1.0"


def test_broken_rule_names_the_fact(
    docker_engine: DockerEngine, base_image: str, tmp_path: Path
) -> None:
    rule = FactRule(
        name="python>=3.12",
        fact="python_version",
        check=lambda v: (version_tuple(v) or (0,)) >= (3, 12),
        expected="Python 3.12 or newer",
    )
    runner = DockerProbeRunner(docker_engine.client, pull="never")
    with pytest.raises(
        PreflightError, match=r"python_version 3\.11\.2; Python 3\.12 or newer \(rule python>=3"
    ):
        preflight(
            base_image, default_probes().common, runner, FactCache(tmp_path / "f.json"), [rule]
        )
    assert (
        docker_engine.client.containers.list(all=True, filters={"label": "inferx.preflight"}) == []
    )
