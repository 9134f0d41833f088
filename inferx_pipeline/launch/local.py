"""Runs an engine's real argv as a process group on this host (a GPU workstation, or CPU).

::

    # the host file (default STATE/local-host.yaml; `scripts/cpu-host` writes one)
    source: this workstation, staged by hand 2026-12-01
    programs:                      # argv[0] of the engine adapters -> executable here
      vllm: {path: /opt/vllm/bin/vllm, package: vllm}
    models:                        # the model store (launch/models.py)
      models: {Qwen/Qwen3-0.6B: /data/models/qwen3-0.6b}
    skus: [h200]                   # what this host serves (default: any)
    gpus: [0, 1]                   # GPU indices engines may use (default: every one)

The launcher picks a free loopback port, fills ``{port}`` and ``{model}``, and hands the
spec to the subprocess launcher: readiness is the engine's own health path with the
spec's deadline, the log is captured, and the group is stopped and reaped on every exit
path; with a ``ProcessLedger`` it is owned by its run (``ownership.py``). The engine
version is the installed package's, read with the engine's own Python. On an NVIDIA
host, the GPUs are read with ``nvidia-smi`` before anything starts and must be the
SKUs the sweep needs (``host_gpus.py``); each server sees its first N usable GPUs
(``CUDA_VISIBLE_DEVICES``).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cached_property
from pathlib import Path

from pydantic import Field

from inferx_pipeline.catalog import Sku, read_model
from inferx_pipeline.errors import LaunchError
from inferx_pipeline.launch.base import ServerHandle, fill_port, free_port
from inferx_pipeline.launch.host_gpus import (
    HostGpu,
    check_sku,
    probe_nvidia,
    usable,
    visible_devices,
)
from inferx_pipeline.launch.local_deploy import start_deployment
from inferx_pipeline.launch.models import ModelStore, fill_model
from inferx_pipeline.launch.ownership import ProcessLedger
from inferx_pipeline.launch.preflight import ImageFacts
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.launch.subprocess import SubprocessLauncher
from inferx_pipeline.strict import FrozenModel

VERSION_PROBE_TIMEOUT_S = 60.0
SHEBANG_READ_BYTES = 4096  # a shebang line plus pip's trampoline line under it
SHELLS = frozenset({"sh", "bash", "dash"})
ENV_OPTIONS_WITH_VALUE = frozenset({"-u", "--unset", "-C", "--chdir"})


class Program(FrozenModel):
    """One engine executable on the host."""

    path: Path = Field(description="Absolute path of the executable (e.g. a venv's bin/vllm).")
    package: str | None = Field(
        default=None, description="Python distribution whose version is the engine version."
    )


class LocalHost(FrozenModel):
    """What one host offers the local launcher: its engine programs and its model store."""

    source: str = Field(description="Who staged this host and when.")
    skus: tuple[str, ...] = Field(default=("*",), description="SKUs this host serves (* = any).")
    programs: dict[str, Program] = Field(description="argv[0] of the adapters -> executable.")
    models: ModelStore = Field(default_factory=ModelStore)
    gpus: tuple[int, ...] | None = Field(
        default=None, description="GPU indices engines may use (None = every one reported)."
    )

    def serves(self, sku: str) -> bool:
        return "*" in self.skus or sku in self.skus

    def require(self, skus: Iterable[str], *, origin: Path) -> None:
        """LaunchError naming ``origin`` when this host serves none of some ``skus``."""
        missing = sorted({sku for sku in skus if not self.serves(sku)})
        if missing:
            raise LaunchError(
                f"{origin}: skus: got {', '.join(self.skus)}; the sweep needs "
                f"{', '.join(missing)}; add them to skus: or select jobs of these SKUs"
            )

    def program(self, name: str) -> Program:
        """The executable for ``name``; LaunchError naming the known programs."""
        try:
            return self.programs[name]
        except KeyError as err:
            raise LaunchError(
                f"no program {name!r} on this host (programs: "
                f"{', '.join(sorted(self.programs)) or 'none'}); add programs.{name} "
                "to the local host file"
            ) from err


def load_local_host(path: Path) -> LocalHost:
    """The host file at ``path``; CatalogError naming the file and field when malformed."""
    if not path.is_file():
        raise LaunchError(
            f"{path}: no local host file (engine programs and model store); "
            "write one with scripts/cpu-host or pass --host-file"
        )
    return read_model(path, LocalHost, "local host file")


def nvidia_gpus(
    host: LocalHost, skus: Iterable[Sku], probe: Callable[[], Sequence[HostGpu]] = probe_nvidia
) -> tuple[HostGpu, ...]:
    """The GPUs engines of ``skus`` may use here, each checked to be every NVIDIA SKU
    among ``skus`` (LaunchError otherwise); () when none is NVIDIA (no probe runs)."""
    nvidia = [sku for sku in skus if sku.vendor == "nvidia"]
    if not nvidia:
        return ()
    gpus = usable(probe(), host.gpus)
    for sku in nvidia:
        check_sku(gpus, sku, need=1)
    return gpus


class LocalLauncher:
    """Starts each spec's real argv on this host; see the module docstring."""

    def __init__(
        self,
        host: LocalHost,
        log_dir: Path,
        *,
        grace_s: float = 10.0,
        environ: Mapping[str, str] | None = None,
        ledger: ProcessLedger | None = None,
        run_id: str = "",
        gpus: Sequence[HostGpu] = (),
    ) -> None:
        self.host = host
        self.gpus = tuple(gpus)
        self._processes = SubprocessLauncher(
            log_dir, grace_s=grace_s, environ=environ, ledger=ledger, run_id=run_id
        )

    def resolve(self, spec: ServerSpec, port: int) -> ServerSpec:
        """``spec`` as it runs here: program path, model location, port, store env (pure)."""
        program = self.host.program(spec.argv[0])
        argv = fill_port((str(program.path), *spec.argv[1:]), port)
        argv = fill_model(argv, self.host.models.location(spec.client.model_name))
        env = {**self.host.models.env(), **spec.env, **self._visibility(spec)}
        return spec.model_copy(update={"argv": argv, "port": port, "env": env})

    def _visibility(self, spec: ServerSpec) -> dict[str, str]:
        if spec.gpus.vendor != "nvidia" or spec.gpus.count == 0:
            return {}
        if spec.gpus.count > len(self.gpus):
            raise LaunchError(
                f"{spec.name}: needs {spec.gpus.count} GPUs; this host offers {len(self.gpus)} "
                f"({', '.join(str(g.index) for g in self.gpus) or 'none probed'}); select jobs "
                "of fewer GPUs or list more in the host file's gpus:"
            )
        return {"CUDA_VISIBLE_DEVICES": visible_devices(self.gpus, spec.gpus.count)}

    def start(self, spec: ServerSpec) -> ServerHandle:
        """Start ``spec`` on a free port; returns before it is healthy (``wait_healthy``).

        A multinode deployment runs here when its engines need no GPU (CPU workers): each
        rank a process and the router (``local_deploy``); with GPUs it needs Slurm.
        """
        if spec.deployment is None:
            return self._processes.start(self.resolve(spec, free_port()))
        if spec.gpus.count and spec.gpus.vendor != "none":
            raise LaunchError(
                f"server {spec.name}: a multinode job's workers need GPUs of their own "
                "nodes; run it with --launcher slurm"
            )
        processes = self._processes
        return start_deployment(
            spec, self.start, log_dir=processes.log_dir, start_router=processes.start
        )


class LocalFacts:
    """The local launcher's preflight: the engine version from the engine's own install.

    Cached per program: one probe per sweep, never a fixed value.
    """

    def __init__(self, host: LocalHost) -> None:
        self.host = host
        self._versions: dict[str, str | None] = {}

    def version(self, name: str) -> str | None:
        """The installed version of program ``name``'s package (None when it has none)."""
        if name not in self._versions:
            self._versions[name] = package_version(self.host.program(name))
        return self._versions[name]

    def digest(self, image: str) -> str:
        """The stand-in for an image digest (``DigestSource``): the host's engine packages."""
        return self.packages

    @cached_property
    def packages(self) -> str:
        """Every program's package and version, e.g. ``local:vllm==0.32.0+cpu``."""
        parts = [f"{n}=={self.version(n) or 'unknown'}" for n in sorted(self.host.programs)]
        return "local:" + ",".join(parts)

    def __call__(self, job: object, spec: ServerSpec) -> ImageFacts:
        return ImageFacts(
            image=spec.image,
            digest=self.packages,
            facts={"engine_version": self.version(spec.argv[0])},
        )


def package_version(program: Program) -> str | None:
    """The installed version of ``program``'s package, read with the program's own Python."""
    if program.package is None:
        return None
    python = program_interpreter(program.path)
    code = f"import importlib.metadata as m; print(m.version({program.package!r}))"
    try:
        done = subprocess.run(
            [python, "-c", code],
            capture_output=True,
            text=True,
            timeout=VERSION_PROBE_TIMEOUT_S,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as err:
        raise LaunchError(
            f"{program.path}: cannot read the version of package {program.package!r} "
            f"with {python}: {err}; check programs in the local host file"
        ) from err
    return done.stdout.strip() or None


def program_interpreter(path: Path) -> str:
    """The Python that runs program ``path``; LaunchError naming ``path`` when it cannot be told.

    A console script names its interpreter on its shebang line: ``#!/venv/bin/python``,
    ``#!/usr/bin/env [-S] python3`` (the name looked up on ``PATH``), or pip's
    ``#!/bin/sh`` trampoline, written when the interpreter's path is too long for a
    shebang or holds a space, whose second line execs the python. A file without a
    shebang (a python binary) is its own interpreter.
    """
    try:
        lines = path.read_bytes()[:SHEBANG_READ_BYTES].split(b"\n", 2)
    except OSError as err:
        raise LaunchError(f"{path}: cannot read the engine program: {err}") from err
    if not lines[0].startswith(b"#!"):
        return str(path)
    # The kernel runs the shebang's first word with the rest as one argument.
    words = os.fsdecode(lines[0][2:]).split()
    program = words[0] if words else ""
    if Path(program).name == "env":
        return _env_program(path, words[1:])
    if Path(program).name in SHELLS:
        return _trampoline_python(path, os.fsdecode(lines[1]) if len(lines) > 1 else "")
    return program


def _env_program(path: Path, args: list[str]) -> str:
    """Where ``/usr/bin/env ARGS`` finds its program: past the options and ``NAME=VALUE``
    settings, looked up on ``PATH`` as env does."""
    rest = iter(args)
    for arg in rest:
        if arg in ENV_OPTIONS_WITH_VALUE:
            next(rest, None)
        elif not arg.startswith("-") and "=" not in arg:
            found = shutil.which(arg)
            if found is None:
                raise LaunchError(
                    f"{path}: its shebang runs {arg!r} through env, and {arg!r} is not on "
                    "PATH; put its bin on PATH or give the engine's own python in the host file"
                )
            return found
    raise LaunchError(f"{path}: its env shebang names no program; fix the engine's script")


def _trampoline_python(path: Path, line: str) -> str:
    """The python that pip's trampoline line ``'''exec' "/path/python" "$0" "$@"`` runs."""
    try:
        words = shlex.split(line)
    except ValueError:  # unbalanced quotes: not pip's line
        words = []
    if len(words) >= 4 and words[0] == "exec" and words[-2:] == ["$0", "$@"]:
        return words[1]
    raise LaunchError(
        f"{path}: a shell script that execs no python (line 2 should be pip's trampoline, "
        f"""'''exec' "/path/python" "$0" "$@"); give the engine's console script or its """
        "python in the host file"
    )
