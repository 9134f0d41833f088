"""The Dagster launcher resource from the settings: INFERX_LAUNCHER picks any launcher, Slurm
included, with its pools file from INFERX_RUNNER_POOLS."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferx_pipeline.defs.definitions import default_resources
from inferx_pipeline.defs.resources import LauncherResource
from inferx_pipeline.errors import LaunchError
from inferx_pipeline.launch.slurm import SlurmLauncher
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.slurm_backends import SlurmBackends
from tests.slurm.conftest import write_pools


def _launcher(settings: Settings) -> LauncherResource:
    resource = default_resources(settings)["launcher"]
    assert isinstance(resource, LauncherResource)
    return resource


def test_inferx_launcher_slurm_makes_the_dagster_resource_run_on_the_slurm_pools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pools = write_pools(tmp_path / "slurm-pools.yaml", skus=("h200",))
    monkeypatch.setenv("INFERX_LAUNCHER", "slurm")
    monkeypatch.setenv("INFERX_RUNNER_POOLS", str(pools))
    settings = Settings(state_dir=tmp_path / "state")
    choice = _launcher(settings).choice()
    assert (choice.kind, choice.pools_file) == ("slurm", pools)
    source = _launcher(settings).source(settings, run_id="r", skus=["h200"])
    assert isinstance(source, SlurmBackends)
    assert isinstance(source.for_sku("h200").launcher, SlurmLauncher)
    with pytest.raises(LaunchError, match="no Slurm pool serves SKU 'mi355x'"):
        _launcher(settings).source(settings, run_id="r", skus=["mi355x"])


@pytest.mark.parametrize("kind", ["sim", "docker", "local", "slurm"])
def test_every_launcher_is_a_valid_default(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFERX_LAUNCHER", kind)
    assert _launcher(Settings()).choice().kind == kind


def test_slurm_without_a_pools_file_says_which_setting_to_set(tmp_path: Path) -> None:
    settings = Settings(launcher="slurm", state_dir=tmp_path)
    with pytest.raises(LaunchError, match="set INFERX_RUNNER_POOLS"):
        _launcher(settings).source(settings, run_id="r", skus=["h200"])
