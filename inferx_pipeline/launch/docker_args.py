"""The docker-py arguments for one server container (pure: no daemon is contacted).

The spec's argv is the whole command: ``argv[0]`` replaces the image's entrypoint
and the rest is its command, so a spec means the same thing on any image. The same
arguments render as ``docker run`` options (``run_flags``) where a script starts the
container on another host (the Slurm ``docker`` runtime).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from docker.types import DeviceRequest, Ulimit
from pydantic import Field

from inferx_pipeline.errors import LaunchError
from inferx_pipeline.launch.base import fill_port
from inferx_pipeline.launch.gpu import gpu_block
from inferx_pipeline.launch.models import ModelStore, fill_model
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.strict import FrozenModel

LABEL_JOB = "inferx.job"
LABEL_FINGERPRINT = "inferx.fingerprint"
LABEL_RUN = "inferx.run"
HF_CACHE_TARGET = "/root/.cache/huggingface"
DEFAULT_CONTAINER_PORT = 8000

PullPolicy = Literal["never", "if-missing", "always"]
NetworkMode = Literal["host", "publish"]


class ContainerLimits(FrozenModel):
    """The resource settings every server container gets (deployment settings, not per recipe)."""

    shm_size: str = Field(default="16g", description="/dev/shm size (docker syntax, e.g. 16g).")
    memlock_bytes: int = Field(
        default=-1, ge=-1, description="RLIMIT_MEMLOCK (-1 = unlimited, what GPU engines want; "
        "a host without CAP_SYS_RESOURCE for dockerd can only grant up to its own hard limit)."
    )  # fmt: skip
    stack_bytes: int = Field(default=64 * 1024 * 1024, gt=0, description="RLIMIT_STACK.")


class DockerOptions(ContainerLimits):
    """How the Docker launcher runs every container (deployment settings, not per recipe)."""

    pull: PullPolicy = Field(default="if-missing", description="When to pull the image.")
    network: NetworkMode = Field(
        default="host",
        description="host: share the host's network (the launcher picks a free port); "
        "publish: a bridge network with the server port published on publish_ip.",
    )
    publish_ip: str = Field(default="127.0.0.1", description="Host address for published ports.")
    hf_cache: Path | None = Field(
        default=None, description="Host directory mounted as the Hugging Face cache."
    )
    models: dict[str, Path] = Field(
        default_factory=dict,
        description="The host's model store: HF id -> checkpoint folder, mounted read-only at "
        "the same path; other models are given to the engine by id (its HF cache or hub).",
    )
    offline: bool = Field(default=True, description="Set HF_HUB_OFFLINE=1 in every server.")
    grace_s: float = Field(default=30.0, gt=0, description="SIGTERM -> SIGKILL grace (s).")
    secret_env: tuple[str, ...] = Field(
        default=("HF_TOKEN",),
        description="Variables every server gets by name from the launcher's environment "
        "(gated checkpoints need HF_TOKEN); their values never enter specs, logs or artifacts.",
    )

    def model_store(self) -> ModelStore:
        """The same store as the launcher sees it on the host (for the client's tokenizer)."""
        return ModelStore(models=self.models, hf_cache=self.hf_cache, offline=self.offline)


def container_name(spec: ServerSpec, run_id: str) -> str:
    """A readable, unique container name (docker allows ``[a-zA-Z0-9][a-zA-Z0-9_.-]*``)."""
    safe = re.sub(r"[^a-zA-Z0-9_.-]+", "-", spec.name).strip("-.")[:60] or "server"
    return f"inferx-{safe}-{run_id[:12]}-{uuid.uuid4().hex[:6]}"


def container_labels(spec: ServerSpec, run_id: str) -> dict[str, str]:
    """The spec's labels plus the three that identify the job and run (ours win)."""
    return {
        **spec.labels,
        LABEL_JOB: spec.name,
        LABEL_FINGERPRINT: spec.fingerprint,
        LABEL_RUN: run_id,
    }


def container_settings(limits: ContainerLimits) -> dict[str, Any]:
    """The docker-py arguments every server container gets, whatever its spec."""
    return {
        # As PID 1 a server ignores SIGTERM until it installs a handler (e.g. while it loads);
        # docker's init forwards the signal so stop() needs the grace period only for hangs.
        "init": True,
        "ipc_mode": "host",
        "shm_size": limits.shm_size,
        "ulimits": [
            Ulimit(name="memlock", soft=limits.memlock_bytes, hard=limits.memlock_bytes),
            Ulimit(name="stack", soft=limits.stack_bytes, hard=limits.stack_bytes),
        ],
    }


def _network(options: DockerOptions, port: int) -> dict[str, Any]:
    if options.network == "host":
        return {"network_mode": "host"}
    return {"ports": {f"{port}/tcp": (options.publish_ip, None)}}


def container_kwargs(
    spec: ServerSpec,
    *,
    port: int,
    run_id: str,
    options: DockerOptions,
    secrets: Mapping[str, str],
) -> dict[str, Any]:
    """Keyword arguments for ``client.containers.create`` running ``spec`` on ``port``.

    The result holds secret values in ``environment``: never log or store it.
    """
    gpu = gpu_block(spec.gpus)
    model = options.models.get(spec.client.model_name)
    argv = fill_model(
        fill_port(spec.argv, port), spec.client.model_name if model is None else str(model)
    )
    environment = {
        **({"HF_HUB_OFFLINE": "1"} if options.offline else {}),
        **({"HF_HOME": HF_CACHE_TARGET} if options.hf_cache else {}),
        **gpu.pop("environment", {}),
        **spec.env,
        **secrets,
    }
    volumes = (
        {str(options.hf_cache): {"bind": HF_CACHE_TARGET, "mode": "rw"}} if options.hf_cache else {}
    )
    if model is not None:
        volumes[str(model)] = {"bind": str(model), "mode": "ro"}
    return {
        "image": spec.image,
        "entrypoint": [argv[0]],
        "command": list(argv[1:]),
        "name": container_name(spec, run_id),
        "labels": container_labels(spec, run_id),
        "environment": environment,
        **container_settings(options),
        "volumes": volumes,
        **_network(options, port),
        **gpu,
    }


def _entrypoint(entrypoint: list[str]) -> list[str]:
    # docker run takes one program for --entrypoint; its arguments go after the image.
    if len(entrypoint) != 1:
        raise LaunchError(f"docker run flags: entrypoint {entrypoint} is not one program")
    return [f"--entrypoint={entrypoint[0]}"]


def _gpus(requests: list[DeviceRequest]) -> list[str]:
    flags = []
    for request in requests:
        ids = ",".join(request.device_ids or [])
        flags.append(f"--gpus=device={ids}" if ids else f"--gpus={request.count}")
    return flags


# docker-py keyword -> its ``docker run`` option(s) for one value.
_FLAGS: dict[str, Callable[[Any], list[str]]] = {
    "name": lambda name: [f"--name={name}"],
    "entrypoint": _entrypoint,
    "labels": lambda labels: [f"--label={k}={v}" for k, v in sorted(labels.items())],
    "init": lambda init: ["--init"] if init else [],
    "ipc_mode": lambda mode: [f"--ipc={mode}"],
    "shm_size": lambda size: [f"--shm-size={size}"],
    "ulimits": lambda limits: [f"--ulimit={u.name}={u.soft}:{u.hard}" for u in limits],
    "network_mode": lambda mode: [f"--network={mode}"],
    "volumes": lambda volumes: [
        f"--volume={host}:{bind['bind']}:{bind['mode']}" for host, bind in sorted(volumes.items())
    ],
    "devices": lambda devices: [f"--device={device}" for device in devices],
    "group_add": lambda groups: [f"--group-add={group}" for group in groups],
    "security_opt": lambda options: [f"--security-opt={option}" for option in options],
    "cap_add": lambda caps: [f"--cap-add={cap}" for cap in caps],
    "device_requests": _gpus,
    # By name only: the value comes from the docker CLI's own environment, never the script.
    "environment": lambda names: [f"--env={name}" for name in sorted(names)],
}


def run_flags(kwargs: Mapping[str, Any]) -> list[str]:
    """``docker run`` options meaning the same as docker-py ``kwargs`` (pure).

    ``environment`` is a collection of variable names here, passed by name. Raises
    LaunchError for a keyword this function cannot render (rather than dropping it).
    """
    unknown = sorted(set(kwargs) - set(_FLAGS))
    if unknown:
        raise LaunchError(f"docker run flags: cannot render {unknown}; known: {sorted(_FLAGS)}")
    return [flag for key, value in kwargs.items() for flag in _FLAGS[key](value)]
