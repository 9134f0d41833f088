"""The batch job of one server group (pure): sbatch options and the script that starts the engine.

The script starts one engine replica per node with ``srun`` (``--kill-on-bad-exit``: one
dead replica ends the job). Each replica, on its node, before ``exec``-ing the engine:

- takes ``HIP_VISIBLE_DEVICES`` from Slurm's ``ROCR_VISIBLE_DEVICES`` (AMD; NVIDIA
  engines read Slurm's ``CUDA_VISIBLE_DEVICES`` as it is);
- fills ``{port}`` (the spec's port, else ``20000 + job id mod 20000``: no port is
  known free on a node before the job runs there), ``{replica}`` (``<job>-<rank>``) and
  ``{cuda}`` (the node's visible GPUs) in its argv;
- prints ``INFERX_SLURM_REPLICA rank=R node=N port=P gpus=G``, which the launcher reads
  from the job's output to find the endpoints.

Literal env values are exported in the script; secrets never are: they reach the job
through sbatch's environment (``--export=`` the host basics and the secret names, nothing
else of the caller's) and, for Docker, ``-e NAME`` by name only.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from pathlib import Path

from inferx_pipeline.launch.slurm_pools import Runtime, SlurmPool
from inferx_pipeline.launch.spec import ServerSpec

REPLICA_PREFIX = "INFERX_SLURM_REPLICA"
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
    arg="${{arg//'{{replica}}'/$SLURM_JOB_ID-$SLURM_PROCID}}"
    args+=("${{arg//'{{cuda}}'/$gpus}}")
  done
  echo "{REPLICA_PREFIX} rank=$SLURM_PROCID node=$SLURMD_NODENAME port=$port gpus=$gpus"
  exec "${{args[@]}}"
}}
export -f inferx_replica
"""

# (srun options, argv prefix) of one runtime for one spec.
Wrapper = tuple[list[str], list[str]]


def store_paths(pool: SlurmPool) -> list[str]:
    """The model store's folders, which containers must see at the same paths."""
    paths = [str(p) for p in pool.model_store.models.values()]
    if pool.model_store.hf_cache is not None:
        paths.append(str(pool.model_store.hf_cache))
    return sorted(set(paths))


def _none(spec: ServerSpec, pool: SlurmPool) -> Wrapper:
    return [], []


def _pyxis(spec: ServerSpec, pool: SlurmPool) -> Wrapper:
    options = [f"--container-image={spec.image}"]
    if mounts := store_paths(pool):
        options.append("--container-mounts=" + ",".join(f"{p}:{p}" for p in mounts))
    return options, []


def _docker_gpus(spec: ServerSpec) -> list[str]:
    if spec.gpus.count == 0 or spec.gpus.vendor == "none":
        return []
    if spec.gpus.vendor == "nvidia":  # the NVIDIA runtime renumbers them from 0 inside
        return ["--gpus=device={cuda}"]
    return ["--device=/dev/kfd", "--device=/dev/dri", "--group-add=video",
            "--group-add=render", "--security-opt=seccomp=unconfined", "--cap-add=SYS_PTRACE",
            "-e", "HIP_VISIBLE_DEVICES"]  # fmt: skip


def _docker(spec: ServerSpec, pool: SlurmPool) -> Wrapper:
    prefix = ["docker", "run", "--rm", "--init", "--network=host", "--name=inferx-{replica}"]
    for name in sorted({*spec.env, *pool.model_store.env(), *spec.secret_env}):
        prefix += ["-e", name]
    for path in store_paths(pool):
        prefix.append(f"--volume={path}:{path}:ro")
    return [], [*prefix, *_docker_gpus(spec), spec.image]


def _apptainer(spec: ServerSpec, pool: SlurmPool) -> Wrapper:
    gpu = {"nvidia": ["--nv"], "amd": ["--rocm"], "none": []}[spec.gpus.vendor]
    binds = [f"--bind={p}" for p in store_paths(pool)]
    return [], ["apptainer", "exec", *gpu, *binds, spec.image]


RUNTIMES: dict[Runtime, Callable[[ServerSpec, SlurmPool], Wrapper]] = {
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
) -> list[str]:
    """sbatch's options for ``spec`` on ``pool`` (pure).

    ``export`` names the only variables the job takes from sbatch's environment (host
    basics and secrets, see ``secrets.engine_env``); never the caller's whole environment.
    """
    options = [f"--job-name={name}", f"--comment={comment}", f"--partition={pool.partition}"]
    options += [f"--time={pool.time_limit}", f"--nodes={pool.replicas}"]
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


def batch_script(spec: ServerSpec, pool: SlurmPool) -> str:
    """The job script starting ``pool.replicas`` replicas of ``spec`` (argv already resolved)."""
    srun_options, prefix = RUNTIMES[pool.runtime](spec, pool)
    port = str(spec.port) if spec.port else f"$(( {PORT_BASE} + SLURM_JOB_ID % {PORT_SPAN} ))"
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in sorted(spec.env.items()))
    srun = ["srun", f"--nodes={pool.replicas}", f"--ntasks={pool.replicas}"]
    # --export=ALL: the batch environment (already the allow-list) plus the replica function;
    # srun would otherwise inherit sbatch's narrower --export through SLURM_EXPORT_ENV.
    srun += ["--ntasks-per-node=1", "--kill-on-bad-exit=1", "--label", "--export=ALL"]
    srun += srun_options
    command = [*srun, "bash", "-c", 'inferx_replica "$@"', "inferx_replica", *prefix, *spec.argv]
    return (
        f"#!/bin/bash\n# inferx server {shlex.quote(spec.name)}: "
        f"{pool.replicas} replica(s), runtime {pool.runtime}\nset -u\n"
        + _REPLICA_FUNCTION.replace("PORT_EXPR", port)
        + exports
        + "exec "
        + shlex.join(command)
        + "\n"
    )
