"""Fixtures for the deploy/ tests: the compose validator and the deploy files as data."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest
import yaml

from tests.deploy import image
from tests.paths import ROOT
from tests.services.docker_engine import DockerEngine
from tests.services.required import unavailable as required

DEPLOY = ROOT / "deploy"
COMPOSE_FILE = DEPLOY / "docker-compose.yaml"
ENV_EXAMPLE = DEPLOY / ".env.example"
DAGSTER_YAML = DEPLOY / "dagster.yaml"
WORKSPACE_YAML = DEPLOY / "workspace.yaml"
# Debian's docker-compose 1.29 (Python) validates against the Compose spec's JSON schema.
DOCKER_COMPOSE = Path("/usr/bin/docker-compose")


def unavailable(reason: str) -> NoReturn:
    """Fail the test: a deploy tool (docker-compose) could not be had."""
    required("docker-compose", reason)


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def env_example() -> dict[str, str]:
    """``NAME -> value`` of every assignment line in deploy/.env.example."""
    pairs = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, sep, value = line.partition("=")
            assert sep, f"{ENV_EXAMPLE.name}: {line!r} is not NAME=value"
            pairs[name.strip()] = value
    return pairs


@dataclass(frozen=True)
class ComposeRun:
    """One ``docker-compose`` invocation's outcome."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def data(self) -> Any:
        """The resolved compose file."""
        assert self.returncode == 0, self.stderr
        return yaml.safe_load(self.stdout)


@dataclass(frozen=True)
class ComposeCli:
    """Runs Debian's docker-compose on a copy of deploy/ with .env made from .env.example."""

    executable: Path

    def config(self, workdir: Path, compose_text: str | None = None) -> ComposeRun:
        """``docker-compose config`` on deploy/ copied to ``workdir`` (optionally edited)."""
        shutil.copytree(DEPLOY, workdir, dirs_exist_ok=True)
        shutil.copy2(ENV_EXAMPLE, workdir / ".env")
        if compose_text is not None:
            (workdir / COMPOSE_FILE.name).write_text(compose_text)
        done = subprocess.run(
            [str(self.executable), "--project-directory", str(workdir),
             "-f", str(workdir / COMPOSE_FILE.name), "config"],
            capture_output=True, text=True, timeout=60, check=False, cwd=workdir,
            env={k: v for k, v in os.environ.items() if not k.startswith(("DOCKER_", "COMPOSE_"))},
        )  # fmt: skip
        return ComposeRun(done.returncode, done.stdout, done.stderr)


def _install_compose() -> str | None:
    """Install docker-compose if missing; the reason it is still unavailable, or None."""
    if DOCKER_COMPOSE.exists():
        return None
    system_deps = ROOT / "scripts" / "system-deps"
    done = subprocess.run(
        [str(system_deps)], capture_output=True, text=True, timeout=900, check=False
    )
    if not DOCKER_COMPOSE.exists():
        return f"scripts/system-deps exited {done.returncode}: {done.stderr[-500:]}"
    return None


@pytest.fixture(scope="session")
def compose_cli() -> ComposeCli:
    """Debian's ``docker-compose`` (installed by scripts/system-deps when missing)."""
    reason = _install_compose()
    if reason is not None:
        unavailable(f"docker-compose unavailable: {reason}")
    return ComposeCli(DOCKER_COMPOSE)


@pytest.fixture(scope="session")
def resolved_compose(
    compose_cli: ComposeCli, tmp_path_factory: pytest.TempPathFactory
) -> ComposeRun:
    """``docker-compose config`` of deploy/ with .env = .env.example."""
    return compose_cli.config(tmp_path_factory.mktemp("compose"))


@pytest.fixture(scope="session")
def dagster_image(docker_engine: DockerEngine, base_image: str) -> str:
    """Tag of the deploy/ Dagster image on the base image, rebuilt when its inputs change."""
    return image.ensure_image(docker_engine.client, base_image)
