"""The local launcher against a real vLLM on CPU: start, health, version, death, cleanup."""

from __future__ import annotations

import json
import os
import signal
import urllib.request
from pathlib import Path

import pytest

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.engines.base import adapter_for
from inferx_pipeline.errors import LaunchError, ServerExitedError
from inferx_pipeline.launch.local import LocalFacts, LocalHost, LocalLauncher, Program
from inferx_pipeline.launch.models import ModelStore
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.settings import Settings
from tests.engines.jobs import recipe_jobs
from tests.services.vllm import TINY_MODEL, TINY_RECIPE, CpuHost

EXIT_DEADLINE_S = 30.0


def _spec() -> ServerSpec:
    job = recipe_jobs(TINY_RECIPE)[0]
    catalog = cached_catalog(Settings().catalog_dir)
    return adapter_for(job).server_spec(job, sku=catalog.sku(job.sku))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_resolve_fills_program_model_port_and_offline_env(tmp_path: Path) -> None:
    host = LocalHost(
        source="test",
        programs={"vllm": Program(path=Path("/opt/vllm/bin/vllm"), package="vllm")},
        models=ModelStore(models={TINY_MODEL: tmp_path / "tiny"}),
    )
    spec = LocalLauncher(host, tmp_path).resolve(_spec(), 8123)
    assert spec.argv[:5] == (
        "/opt/vllm/bin/vllm", "serve", str(tmp_path / "tiny"), "--served-model-name", TINY_MODEL,
    )  # fmt: skip
    assert "8123" in spec.argv and spec.port == 8123
    assert spec.env["HF_HUB_OFFLINE"] == "1" and spec.env["VLLM_CPU_KVCACHE_SPACE"] == "1"


def test_unknown_program_and_unstaged_model_are_named(tmp_path: Path) -> None:
    empty = LocalHost(source="test", programs={})
    with pytest.raises(LaunchError, match=r"no program 'vllm' on this host .* programs\.vllm"):
        LocalLauncher(empty, tmp_path).resolve(_spec(), 1)
    unstaged = empty.model_copy(update={"programs": {"vllm": Program(path=Path("/x"))}})
    with pytest.raises(LaunchError, match=r"'inferx/tiny-qwen3' is not in the model store"):
        LocalLauncher(unstaged, tmp_path).resolve(_spec(), 1)
    with pytest.raises(LaunchError, match=r"no tokenizer\.json in the model store"):
        ModelStore(models={TINY_MODEL: tmp_path}).tokenizer(TINY_MODEL)


@pytest.mark.vllm
def test_real_vllm_serves_reports_its_version_and_dies_visibly(
    cpu_host: CpuHost, tmp_path: Path
) -> None:
    facts = LocalFacts(cpu_host.host)
    assert facts.version("vllm") == "0.32.0+cpu"
    assert facts.digest("ignored") == "local:vllm==0.32.0+cpu"
    server = LocalLauncher(cpu_host.host, tmp_path).start(_spec())
    with server:
        server.wait_healthy()
        with urllib.request.urlopen(server.base_url + "/version", timeout=10) as answer:
            assert json.load(answer)["version"] == "0.32.0"  # the package says 0.32.0+cpu
        with urllib.request.urlopen(server.base_url + "/v1/models", timeout=10) as answer:
            assert [m["id"] for m in json.load(answer)["data"]] == [TINY_MODEL]
        pid = server.proc.pid
        os.killpg(pid, signal.SIGKILL)
        server.proc.wait(EXIT_DEADLINE_S)
        with pytest.raises(ServerExitedError, match="exited with status 137") as info:
            server.raise_if_exited()
        assert info.value.log_tail, "the log tail of the dead server is kept"
    assert not _alive(pid)
