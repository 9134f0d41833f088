"""The local launcher: how it resolves a spec, and the engine facts of a real vLLM install."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.engines.base import adapter_for
from inferx_pipeline.errors import LaunchError
from inferx_pipeline.launch.local import LocalFacts, LocalHost, LocalLauncher, Program
from inferx_pipeline.launch.models import ModelStore
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.settings import Settings
from tests.engines.jobs import recipe_jobs
from tests.services.vllm import TINY_MODEL, TINY_RECIPE, CpuHost


def _spec() -> ServerSpec:
    job = recipe_jobs(TINY_RECIPE)[0]
    catalog = cached_catalog(Settings().catalog_dir)
    return adapter_for(job).server_spec(job, sku=catalog.sku(job.sku))


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
def test_the_engine_version_and_digest_come_from_the_installed_package(cpu_host: CpuHost) -> None:
    # Serving, death and cleanup of the real engine: tests/e2e/test_real_vllm.py.
    facts = LocalFacts(cpu_host.host)
    assert facts.version("vllm") == "0.32.0+cpu"
    assert facts.digest("ignored") == "local:vllm==0.32.0+cpu"
