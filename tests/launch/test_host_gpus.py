"""The local launcher on an NVIDIA host: GPUs read with nvidia-smi, checked against the SKU.

``tests/fixtures/nvidia-smi/h200.csv`` is the real answer of an H200 SXM host to
``NVIDIA_QUERY`` (read 2026-12-04); the multi-GPU answers are built from its format.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from inferx_pipeline.catalog import Sku, cached_catalog
from inferx_pipeline.cli import cli
from inferx_pipeline.errors import LaunchError
from inferx_pipeline.launch.host_gpus import (
    NVIDIA_QUERY,
    HostGpu,
    parse_nvidia_smi,
    probe_nvidia,
)
from inferx_pipeline.launch.local import LocalHost, LocalLauncher, Program, nvidia_gpus
from inferx_pipeline.launch.models import ModelStore
from inferx_pipeline.launch.spec import GpuRequest
from inferx_pipeline.settings import Settings
from tests.launch.specs import make_spec
from tests.paths import ROOT

H200_ANSWER = (ROOT / "tests" / "fixtures" / "nvidia-smi" / "h200.csv").read_text()


def _sku(sku_id: str) -> Sku:
    return cached_catalog(Settings().catalog_dir).sku(sku_id)


def _answer(name: str, count: int) -> str:
    return "".join(f"{i}, GPU-{i:08d}, {name}, 143771\n" for i in range(count))


def _host(gpus: tuple[int, ...] | None = None) -> LocalHost:
    return LocalHost(
        source="test",
        programs={"engine": Program(path=Path("/opt/engine"))},
        models=ModelStore(models={"sim": Path("/models/sim")}),
        gpus=gpus,
    )


def _probe(answer: str) -> Any:
    return lambda: parse_nvidia_smi(answer)


def test_the_real_h200_answer_is_read() -> None:
    (gpu,) = parse_nvidia_smi(H200_ANSWER)
    assert (gpu.index, gpu.name, gpu.memory_mib) == (0, "NVIDIA H200", 143771)
    assert gpu.uuid.startswith("GPU-")


def test_a_malformed_answer_names_its_line() -> None:
    with pytest.raises(LaunchError, match=r"line 2: got 'No devices were found'"):
        parse_nvidia_smi(H200_ANSWER + "No devices were found\n")


def test_an_h200_host_serves_h200_and_refuses_other_skus_by_name() -> None:
    assert [g.index for g in nvidia_gpus(_host(), [_sku("h200")], _probe(H200_ANSWER))] == [0]
    with pytest.raises(LaunchError) as err:
        nvidia_gpus(_host(), [_sku("h100")], _probe(H200_ANSWER))
    assert "nvidia-smi reports GPU 0 'NVIDIA H200', not a h100" in str(err.value)
    assert "catalog/skus.yaml" in str(err.value)


def test_a_cpu_or_amd_sweep_never_probes() -> None:
    def probe() -> tuple[HostGpu, ...]:
        raise AssertionError("probed")

    assert nvidia_gpus(_host(), [_sku("cpu"), _sku("mi300x")], probe) == ()


def test_the_host_files_gpus_choose_and_must_exist() -> None:
    eight = _probe(_answer("NVIDIA H200", 8))
    assert [g.index for g in nvidia_gpus(_host((4, 5)), [_sku("h200")], eight)] == [4, 5]
    with pytest.raises(LaunchError, match=r"gpus: 9 not on this host"):
        nvidia_gpus(_host((4, 9)), [_sku("h200")], eight)


def test_each_server_sees_its_first_n_gpus_and_no_more_than_there_are() -> None:
    gpus = nvidia_gpus(_host((2, 3, 6)), [_sku("h200")], _probe(_answer("NVIDIA H200", 8)))
    launcher = LocalLauncher(_host(), Path("/unused"), gpus=gpus)
    spec = make_spec(("engine", "--port", "{port}"), gpus=GpuRequest(vendor="nvidia", count=2))
    assert launcher.resolve(spec, 9000).env["CUDA_VISIBLE_DEVICES"] == "2,3"
    cpu = make_spec(("engine", "--port", "{port}"))
    assert "CUDA_VISIBLE_DEVICES" not in launcher.resolve(cpu, 9000).env
    wide = spec.model_copy(update={"gpus": GpuRequest(vendor="nvidia", count=4)})
    with pytest.raises(LaunchError, match=r"needs 4 GPUs; this host offers 3 \(2, 3, 6\)"):
        launcher.resolve(wide, 9000)


def test_no_driver_is_a_launch_error_that_says_where_to_run() -> None:
    def missing(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        assert tuple(argv) == NVIDIA_QUERY
        raise FileNotFoundError(argv[0])

    with pytest.raises(LaunchError, match=r"no nvidia-smi on this host"):
        probe_nvidia(missing)


def test_a_local_sweep_of_an_nvidia_sku_without_a_driver_stops_before_any_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host_file = tmp_path / "host.yaml"
    host_file.write_text("source: test\nprograms:\n  vllm: {path: /bin/false}\n")
    monkeypatch.setenv("INFERX_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("PATH", str(tmp_path))  # this CI host has no nvidia-smi either way
    args = ["sweep", "--recipe", "qwen3.8*", "--launcher", "local", "--host-file", str(host_file)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output
    assert "no nvidia-smi on this host" in result.output
    assert not list((tmp_path / "state").glob("logs/*/*"))  # no server was started
