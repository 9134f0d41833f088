"""`inferx sweep --launcher docker` for real: runner pools, secrets kept out, Ctrl-C cleanup."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from docker.errors import DockerException

from inferx_pipeline.cli import cli
from inferx_pipeline.launch.docker_args import LABEL_RUN
from inferx_pipeline.sweep.artifacts import SERVER_SPEC, ArtifactStore
from tests.services.docker_engine import DockerEngine
from tests.sweep.conftest import SEED
from tests.sweep.interrupt import assert_cancelled_cleanly, interrupt_after_first_point
from tests.sweep.test_cli_sweep import FAST_FLAGS
from tests.sweep.test_docker_sweep import MEMLOCK

pytestmark = pytest.mark.docker

FAKE_TOKEN = "hf_FAKEsecretVALUE0123456789"
WATCH_DEADLINE_S = 60.0


def pools_file(tmp: Path, url: str) -> Path:
    """A pools file serving the seed's SKU on ``url`` (this machine's dockerd limits memlock)."""
    path = tmp / "runner-pools.yaml"
    path.write_text(
        "source: test inventory (the private dockerd)\npools:\n  amd:\n    skus: [mi325x]\n"
        f"    docker: {{pull: never, grace_s: 5, shm_size: 256m, memlock_bytes: {MEMLOCK}}}\n"
        f"    hosts: [{{url: '{url}'}}]\n"
    )
    return path


def _args(tmp: Path, engine: DockerEngine, image: str, *flags: str) -> list[str]:
    return ["sweep", "--launcher", "docker", "--sim-image", image,
            "--pools", str(pools_file(tmp, engine.url)), "--recipe", SEED,
            "--artifacts-dir", str(tmp / "artifacts"), *flags]  # fmt: skip


def _env(tmp: Path) -> dict[str, str]:
    # DOCKER_HOST points nowhere: the host must come from the pools file.
    return {"DOCKER_HOST": "unix:///nonexistent/docker.sock", "HF_TOKEN": FAKE_TOKEN,
            "INFERX_STATE_DIR": str(tmp / "state"), "COLUMNS": "200"}  # fmt: skip


class EnvWatch(threading.Thread):
    """Records the environment and devices of the first container of any sweep run (polls)."""

    def __init__(self, engine: DockerEngine, deadline_s: float = WATCH_DEADLINE_S) -> None:
        super().__init__(daemon=True)
        self.engine = engine
        self.deadline_s = deadline_s
        self.env: list[str] = []
        self.devices: list[str] = []  # host path -> container path, as docker --device says

    def run(self) -> None:
        deadline = time.monotonic() + self.deadline_s
        while not self.env and time.monotonic() < deadline:
            with contextlib.suppress(DockerException):
                for c in self.engine.client.containers.list(filters={"label": LABEL_RUN}):
                    devices = c.attrs["HostConfig"]["Devices"] or []
                    self.devices = [f"{d['PathOnHost']}:{d['PathInContainer']}" for d in devices]
                    self.env = list(c.attrs["Config"]["Env"])
            time.sleep(0.05)  # polling the daemon, bounded by the deadline


def test_sweep_runs_on_the_pool_host_and_keeps_the_secret_out_of_every_file(
    docker_engine: DockerEngine, sim_image: str, tmp_path: Path
) -> None:
    watch = EnvWatch(docker_engine)
    watch.start()
    args = _args(tmp_path, docker_engine, sim_image, *FAST_FLAGS)
    result = CliRunner().invoke(cli, args, env=_env(tmp_path))
    watch.join(WATCH_DEADLINE_S)
    assert result.exit_code == 0, result.output
    assert result.output.rstrip().endswith("8 jobs: 8 ok")
    assert f"HF_TOKEN={FAKE_TOKEN}" in watch.env  # passed to the server by name
    files = [p for top in ("artifacts", "state") for p in (tmp_path / top).rglob("*")]
    assert any(p.name == "image-facts.json" for p in files)  # the preflight ran and cached
    leaked = [p for p in files if p.is_file() and FAKE_TOKEN.encode() in p.read_bytes()]
    assert leaked == [] and FAKE_TOKEN not in result.output
    store = ArtifactStore(tmp_path / "artifacts")
    manifest = next(store.all_attempts())
    assert b'"HF_TOKEN": "<redacted>"' in store.read(manifest.artifacts[SERVER_SPEC])
    assert docker_engine.client.containers.list(all=True, filters={"label": LABEL_RUN}) == []


def test_ctrl_c_cancels_the_rest_and_leaves_no_container(
    docker_engine: DockerEngine, sim_image: str, tmp_path: Path
) -> None:
    slow = [f if f != "0.001" else "0.05" for f in FAST_FLAGS]  # points of about a second
    args = _args(tmp_path, docker_engine, sim_image, *slow)
    code, output, _ = interrupt_after_first_point(args, _env(tmp_path), tmp_path / "artifacts")
    assert_cancelled_cleanly(code, output, tmp_path / "artifacts")
    assert docker_engine.client.containers.list(all=True, filters={"label": LABEL_RUN}) == []
