"""Which launcher a deployment uses: a ``kind``-tagged config resolved through one dict.

::

    launcher = build_launcher(DockerLauncherConfig(), run_id=run_id, log_dir=logs, host=host)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from inferx_pipeline.errors import LaunchError
from inferx_pipeline.launch.base import Launcher
from inferx_pipeline.launch.docker import DockerLauncher
from inferx_pipeline.launch.docker_args import DockerOptions
from inferx_pipeline.launch.fake import FakeLauncher, FakeScript
from inferx_pipeline.launch.pools import DockerHost, docker_client
from inferx_pipeline.launch.subprocess import SubprocessLauncher
from inferx_pipeline.strict import StrictModel


class SubprocessLauncherConfig(StrictModel):
    """Child processes on this machine (the embedded simulator)."""

    kind: Literal["subprocess"] = "subprocess"
    grace_s: float = Field(default=10.0, gt=0, description="SIGTERM -> SIGKILL grace (s).")


class DockerLauncherConfig(StrictModel):
    """Containers on a Docker host from the runner pools."""

    kind: Literal["docker"] = "docker"
    options: DockerOptions = Field(default_factory=DockerOptions)


class FakeLauncherConfig(StrictModel):
    """In-process fake servers, for tests of the layers above."""

    kind: Literal["fake"] = "fake"
    script: FakeScript = Field(default_factory=FakeScript)


LauncherConfig = Annotated[
    SubprocessLauncherConfig | DockerLauncherConfig | FakeLauncherConfig,
    Field(discriminator="kind"),
]


class _Context(StrictModel):
    run_id: str
    log_dir: Path
    host: DockerHost | None
    environ: Mapping[str, str] | None


def _subprocess(config: LauncherConfig, ctx: _Context) -> Launcher:
    assert isinstance(config, SubprocessLauncherConfig)
    return SubprocessLauncher(ctx.log_dir, grace_s=config.grace_s, environ=ctx.environ)


def _docker(config: LauncherConfig, ctx: _Context) -> Launcher:
    assert isinstance(config, DockerLauncherConfig)
    if ctx.host is None:
        raise LaunchError("the docker launcher needs a Docker host: pick one from the runner pools")
    return DockerLauncher(
        docker_client(ctx.host),
        run_id=ctx.run_id,
        log_dir=ctx.log_dir,
        options=config.options,
        environ=ctx.environ,
    )


def _fake(config: LauncherConfig, ctx: _Context) -> Launcher:
    assert isinstance(config, FakeLauncherConfig)
    return FakeLauncher(config.script, log_dir=ctx.log_dir)


BUILDERS: dict[str, Callable[[LauncherConfig, _Context], Launcher]] = {
    "subprocess": _subprocess,
    "docker": _docker,
    "fake": _fake,
}


def build_launcher(
    config: LauncherConfig,
    *,
    run_id: str,
    log_dir: Path,
    host: DockerHost | None = None,
    environ: Mapping[str, str] | None = None,
) -> Launcher:
    """The launcher ``config`` describes. ``host`` is required for ``docker`` (``LaunchError``)."""
    ctx = _Context(run_id=run_id, log_dir=log_dir, host=host, environ=environ)
    return BUILDERS[config.kind](config, ctx)
