"""The batch job of one server group (pure): sbatch options and the script that starts the engine.

The script starts one engine replica per node with ``srun`` (``--kill-on-bad-exit``: one
dead replica ends the job). Each replica, on its node, before ``exec``-ing the engine:

- takes ``HIP_VISIBLE_DEVICES`` from Slurm's ``ROCR_VISIBLE_DEVICES`` (AMD; NVIDIA
  engines read Slurm's ``CUDA_VISIBLE_DEVICES`` as it is);
- fills ``{port}`` (the spec's port, else ``20000 + job id mod 20000``: no port is
  known free on a node before the job runs there), ``{job}`` (the Slurm job id),
  ``{replica}`` (``<job>-<rank>``) and ``{cuda}`` (the node's visible GPUs) in its argv;
- prints ``INFERX_SLURM_REPLICA rank=R node=N port=P gpus=G``, which the launcher reads
  from the job's output to find the endpoints.

Under the ``docker`` runtime the container (``docker_args``, labelled with the job id) is
not ``exec``-ed: the replica waits for it and removes every container of the job when it
ends (``scancel``, time limit: Slurm's SIGTERM, then SIGKILL after ``KillWait``). The
launcher's ``stop`` runs the same removal on the allocation's nodes before it cancels.

Literal env values are exported in the script (each name checked, ``envnames``: a name
is shell syntax there, its value is quoted); secrets never are: they reach the job
through sbatch's environment (``--export=`` the host basics and the secret names, nothing
else of the caller's) and, for Docker, ``-e NAME`` by name only.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from docker.types import DeviceRequest

from inferx_pipeline.envnames import check_env_name
from inferx_pipeline.errors import LaunchError
from inferx_pipeline.launch.docker_args import container_labels, container_settings, run_flags
from inferx_pipeline.launch.gpu import gpu_block
from inferx_pipeline.launch.slurm_pools import Runtime, SlurmPool
from inferx_pipeline.launch.spec import ServerSpec

REPLICA_PREFIX = "INFERX_SLURM_REPLICA"
EXIT_PREFIX = "INFERX_SLURM_WORKER_EXIT"  # a deployment's worker that ended (slurm_deploy)
PORT_BASE = 20000
PORT_SPAN = 20000

_REPLICA_FUNCTION = f"""\
inferx_replica() {{
  if [ -n "${{ROCR_VISIBLE_DEVICES:-}}" ]; then
    export HIP_VISIBLE_DEVICES="$ROCR_VISIBLE_DEVICES"
  fi
  local port=PORT_EXPR gpus="${{CUDA_VISIBLE_DEVICES:-${{HIP_VISIBLE_DEVICES:-}}}}" arg
  local args=()
  for arg in "$@"; do
    arg="${{arg//'{{port}}'/$port}}"
    arg="${{arg//'{{job}}'/$SLURM_JOB_ID}}"
    arg="${{arg//'{{replica}}'/$SLURM_JOB_ID-$SLURM_PROCID}}"
    args+=("${{arg//'{{cuda}}'/$gpus}}")
  done
  echo "{REPLICA_PREFIX} rank=$SLURM_PROCID node=$SLURMD_NODENAME port=$port gpus=$gpus"
RUN_ENGINE}}
export -f inferx_replica
"""
_EXEC = '  exec "${args[@]}"\n'
# The docker CLI may be killed before its container stops: remove the job's containers on
# the way out, whatever ended the replica (the TERM trap turns Slurm's signal into an exit).
_DOCKER_WAIT = """\
  trap CLEANUP EXIT
  trap 'exit 143' TERM INT
  "${args[@]}" &
  wait $!
"""
LABEL_SLURM_JOB = "inferx.slurm_job"

# (srun options, the command each replica runs) of one runtime for one spec.
Wrapper = tuple[list[str], list[str]]


def store_paths(pool: SlurmPool) -> list[str]:
    """The model store's folders, which containers must see at the same paths."""
    paths = [str(p) for p in pool.model_store.models.values()]
    if pool.model_store.hf_cache is not None:
        paths.append(str(pool.model_store.hf_cache))
    return sorted(set(paths))


def _none(spec: ServerSpec, pool: SlurmPool, run_id: str) -> Wrapper:
    return [], list(spec.argv)


def _pyxis(spec: ServerSpec, pool: SlurmPool, run_id: str) -> Wrapper:
    options = [f"--container-image={spec.image}"]
    if mounts := store_paths(pool):
        options.append("--container-mounts=" + ",".join(f"{p}:{p}" for p in mounts))
    return options, list(spec.argv)


def docker_cleanup(job_id: str, pool: SlurmPool) -> str:
    """Shell removing every container labelled with Slurm job ``job_id`` (a shell word) on the
    node it runs on, through the pool's daemon; it always succeeds."""
    host = f"DOCKER_HOST={shlex.quote(pool.docker.host)} " if pool.docker.host else ""
    ids = f"{host}docker ps -aq --filter label={LABEL_SLURM_JOB}={job_id}"
    return f"{ids} | {host}xargs -r docker rm -f >/dev/null 2>&1 || true"


def docker_kwargs(spec: ServerSpec, pool: SlurmPool, run_id: str) -> dict[str, Any]:
    """The container of one replica as docker-py arguments (``docker_args``), for ``run_flags``.

    GPU visibility comes from Slurm: NVIDIA's runtime gets the bound GPUs (``{cuda}``),
    AMD's devices (the pool's, else the vendor's) come with ``HIP_VISIBLE_DEVICES``.
    """
    gpu = gpu_block(spec.gpus)
    gpu.pop("environment", None)  # the vendor's numbering; Slurm's binding wins
    if "device_requests" in gpu:
        gpu["device_requests"] = [DeviceRequest(device_ids=["{cuda}"], capabilities=[["gpu"]])]
    if pool.docker.devices is not None:
        gpu["devices"] = list(pool.docker.devices)
    visible = ["HIP_VISIBLE_DEVICES"] if gpu.get("devices") else []
    names = {*spec.env, *pool.model_store.env(), *spec.secret_env, *visible}
    return {
        "name": "inferx-{replica}",
        "entrypoint": [spec.argv[0]],
        "labels": {**container_labels(spec, run_id), LABEL_SLURM_JOB: "{job}"},
        **container_settings(pool.docker),
        "network_mode": "host",
        "volumes": {p: {"bind": p, "mode": "ro"} for p in store_paths(pool)},
        "environment": sorted(names),
        **gpu,
    }


def _docker(spec: ServerSpec, pool: SlurmPool, run_id: str) -> Wrapper:
    flags = run_flags(docker_kwargs(spec, pool, run_id))
    # argv[0] replaces the image's entrypoint, as under the Docker launcher.
    return [], ["docker", "run", "--rm", *flags, spec.image, *spec.argv[1:]]


def _apptainer(spec: ServerSpec, pool: SlurmPool, run_id: str) -> Wrapper:
    gpu = {"nvidia": ["--nv"], "amd": ["--rocm"], "none": []}[spec.gpus.vendor]
    binds = [f"--bind={p}" for p in store_paths(pool)]
    return [], ["apptainer", "exec", *gpu, *binds, spec.image, *spec.argv]


RUNTIMES: dict[Runtime, Callable[[ServerSpec, SlurmPool, str], Wrapper]] = {
    "none": _none,
    "pyxis": _pyxis,
    "docker": _docker,
    "apptainer": _apptainer,
}


def gres(spec: ServerSpec, pool: SlurmPool) -> str | None:
    """The per-node ``--gres``: the pool's, else the server's GPU count (None: no GPUs)."""
    if pool.gres_per_node is not None:
        return pool.gres_per_node
    return f"gpu:{spec.gpus.count}" if spec.gpus.count else None


def sbatch_options(
    spec: ServerSpec,
    pool: SlurmPool,
    *,
    name: str,
    comment: str,
    output: Path,
    export: Sequence[str],
    nodes: int | None = None,
) -> list[str]:
    """sbatch's options for ``spec`` on ``pool`` (pure); ``nodes`` default: one per replica.

    ``export`` names the only variables the job takes from sbatch's environment (host
    basics and secrets, see ``secrets.engine_env``); never the caller's whole environment.
    """
    options = [f"--job-name={name}", f"--comment={comment}", f"--partition={pool.partition}"]
    options += [f"--time={pool.time_limit}", f"--nodes={nodes or pool.replicas}"]
    # No requeue: a job that lost its node ends NODE_FAIL and the sweep decides what reruns.
    options += ["--ntasks-per-node=1", f"--output={output}", "--no-requeue"]
    options.append("--export=" + ",".join(export))
    for flag, value in (
        ("--account", pool.account),
        ("--qos", pool.qos),
        ("--gres", gres(spec, pool)),
    ):
        if value:
            options.append(f"{flag}={value}")
    return options + list(pool.extra_args)


def _replica_function(spec: ServerSpec, pool: SlurmPool) -> str:
    port = str(spec.port) if spec.port else f"$(( {PORT_BASE} + SLURM_JOB_ID % {PORT_SPAN} ))"
    run = _EXEC
    if pool.runtime == "docker":
        run = _DOCKER_WAIT.replace("CLEANUP", shlex.quote(docker_cleanup("$SLURM_JOB_ID", pool)))
    return _REPLICA_FUNCTION.replace("PORT_EXPR", port).replace("RUN_ENGINE", run)


def check_names(spec: ServerSpec, names: Sequence[str]) -> None:
    # Specs built with model_copy(update=...) skip validation: the script checks again.
    for name in names:
        try:
            check_env_name(name)
        except ValueError as err:
            raise LaunchError(
                f"server {spec.name}: {err}; fix it in the recipe's engine.env or the Slurm "
                "pool's secret_env"
            ) from err


def batch_script(spec: ServerSpec, pool: SlurmPool, *, run_id: str) -> str:
    """The job script starting ``pool.replicas`` replicas of ``spec`` (argv already resolved).

    ``run_id`` labels Docker containers as the Docker launcher's are (``container_labels``).
    Raises LaunchError naming a variable whose name is not a POSIX name (``envnames``).
    """
    env = dict(spec.env)
    if pool.runtime == "docker" and pool.docker.host:
        env["DOCKER_HOST"] = pool.docker.host  # an address, not a secret
    check_names(spec, [*env, *spec.secret_env])
    srun_options, replica = RUNTIMES[pool.runtime](spec, pool, run_id)
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in sorted(env.items()))
    srun = ["srun", f"--nodes={pool.replicas}", f"--ntasks={pool.replicas}"]
    # --export=ALL: the batch environment (already the allow-list) plus the replica function;
    # srun would otherwise inherit sbatch's narrower --export through SLURM_EXPORT_ENV.
    srun += ["--ntasks-per-node=1", "--kill-on-bad-exit=1", "--label", "--export=ALL"]
    srun += srun_options
    command = [*srun, "bash", "-c", 'inferx_replica "$@"', "inferx_replica", *replica]
    return (
        f"#!/bin/bash\n# inferx server {shlex.quote(spec.name)}: "
        f"{pool.replicas} replica(s), runtime {pool.runtime}\nset -u\n"
        + _replica_function(spec, pool)
        + exports
        + "exec "
        + shlex.join(command)
        + "\n"
    )
