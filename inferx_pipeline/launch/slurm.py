"""Runs a ServerSpec as one Slurm batch job per server group, behind the launcher interface.

::

    launcher = SlurmLauncher(pool, cli=SlurmCli(os.environ), log_dir=logs, run_id=run_id)
    launcher.cleanup_orphans()                  # our jobs whose launcher died (a Reaped)
    with launcher.start(spec) as server:        # sbatch; returns once every replica printed
        server.wait_healthy()                   # its node and port (scancel on any failure)
        run_client(server.base_url)

Two clocks bound a start: a job may wait ``pool.queue_timeout_s`` in the queue (pending,
held, nodes booting), and the engine's ``startup_timeout_s`` counts from the moment the
job runs, for its replicas to print their ports and for health (``wait_healthy``).

The job's output file (``slurm_job-<id>.out``, on a folder the nodes share with the
submit host) is streamed into the server log while the job runs. Each job carries its
owner (``ownership.Owner``: run, host, PID and the PID's start time) in its comment
(``inferx run=<run> owner=<host>:<pid>:<start>``), so a later sweep finds the jobs of a
launcher that died without ``scancel`` among this user's jobs (``squeue --me``) and
cancels them, as the other launchers stop what a dead owner left.

Under Slurm an engine must listen on its node's address, so ``--host``'s value in the
argv becomes ``0.0.0.0``. With ``pool.replicas > 1`` the job runs one replica per node
and the handle's URL is a local round-robin proxy over them (``slurm_proxy``). A spec
with a ``deployment`` (a multinode job) runs as one job of its workers with a router in
front (``slurm_deploy``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from inferx_pipeline.errors import LaunchError
from inferx_pipeline.launch.base import LogBuffer, cleanup_on_failure, log_file
from inferx_pipeline.launch.models import MODEL_PLACEHOLDER, fill_model
from inferx_pipeline.launch.ownership import Owner, Reaped, orphaned
from inferx_pipeline.launch.secrets import engine_env
from inferx_pipeline.launch.slurm_cli import SlurmCli
from inferx_pipeline.launch.slurm_deploy import (
    DeploymentHandle,
    allocation_nodes,
    deployment_script,
)
from inferx_pipeline.launch.slurm_handle import SlurmHandle
from inferx_pipeline.launch.slurm_log import JobOutput
from inferx_pipeline.launch.slurm_pools import SlurmPool
from inferx_pipeline.launch.slurm_script import batch_script, docker_cleanup, sbatch_options
from inferx_pipeline.launch.spec import ServerSpec

COMMENT_PREFIX = "inferx"
OUTPUT_NAME = "slurm_job-%j.out"


def owner_comment(owner: Owner) -> str:
    """A job's ``--comment`` naming its owner (``ownership.Owner``)."""
    return f"{COMMENT_PREFIX} run={owner.run_id} owner={owner.label}"


def parse_comment(comment: str) -> dict[str, str]:
    """The key=value fields of an ``owner_comment`` ({} for a job that is not ours)."""
    words = comment.split()
    if not words or words[0] != COMMENT_PREFIX:
        return {}
    return dict(word.split("=", 1) for word in words[1:] if "=" in word)


def comment_owner(comment: str) -> Owner | None:
    """The owner a job's comment names; None for a job with no owner of ours."""
    fields = parse_comment(comment)
    return Owner.from_label(fields.get("run", ""), fields.get("owner", ""))


def listen_on_all(argv: tuple[str, ...]) -> tuple[str, ...]:
    """``argv`` with the value of ``--host`` set to ``0.0.0.0`` (pure)."""
    out = list(argv)
    for index, arg in enumerate(out[:-1]):
        if arg == "--host":
            out[index + 1] = "0.0.0.0"
    return tuple(re.sub(r"^--host=.*", "--host=0.0.0.0", arg) for arg in out)


class SlurmLauncher:
    """Starts each spec as a batch job on ``pool``; see the module docstring.

    ``environ`` (default: this process's) is what Slurm commands run with (``SLURM_CONF``);
    the job takes from it only the host basics and the secrets named in
    ``pool.secret_env`` and each spec (``secrets.engine_env``).
    """

    def __init__(
        self,
        pool: SlurmPool,
        *,
        log_dir: Path,
        run_id: str,
        cli: SlurmCli | None = None,
        environ: Mapping[str, str] | None = None,
        poll_s: float = 0.5,
    ) -> None:
        self.pool = pool
        self.log_dir = log_dir
        self.run_id = run_id
        env = dict(os.environ if environ is None else environ)
        self.cli = cli or SlurmCli(env, cluster=pool.cluster)
        self.poll_s = poll_s

    def resolve(self, spec: ServerSpec) -> ServerSpec:
        """``spec`` as it runs on the pool: program, model path, listen address, store env
        (for a deployment, in every worker's argv)."""
        env = {**self.pool.model_store.env(), **spec.env}
        secrets = tuple(dict.fromkeys(spec.secret_env + self.pool.secret_env))
        update: dict[str, object] = {
            "argv": self._argv(spec.argv, spec), "env": env, "secret_env": secrets,
        }  # fmt: skip
        if spec.deployment is not None:
            workers = tuple(
                w.model_copy(
                    update={
                        "argv": self._argv(w.argv, spec),
                        "follower_argv": self._argv(w.follower_argv, spec),
                    }
                )
                for w in spec.deployment.workers
            )
            update["deployment"] = spec.deployment.model_copy(update={"workers": workers})
        return spec.model_copy(update=update)

    def _argv(self, argv: tuple[str, ...], spec: ServerSpec) -> tuple[str, ...]:
        if not argv:
            return argv
        argv = listen_on_all(argv)
        if self.pool.runtime == "none" and argv[0] in self.pool.programs:
            argv = (self.pool.programs[argv[0]], *argv[1:])
        if any(MODEL_PLACEHOLDER in arg for arg in argv):
            argv = fill_model(argv, self.pool.model_store.location(spec.client.model_name))
        return argv

    def start(self, spec: ServerSpec) -> SlurmHandle:
        """Submit ``spec``'s job; return once every replica (every worker of a deployment)
        runs and its URL is known.

        Raises LaunchError (sbatch refused), AllocationEndedError (the job ended first)
        or ServerStartTimeoutError; on any failure the job is already cancelled.
        """
        resolved = self.resolve(spec)
        shared = self.pool.log_dir or self.log_dir
        shared.mkdir(parents=True, exist_ok=True)
        dep = resolved.deployment
        simulated = resolved.gpus.count == 0
        if dep is None:
            script, nodes = (
                batch_script(resolved, self.pool, run_id=self.run_id),
                self.pool.replicas,
            )
        else:
            script = deployment_script(
                resolved, self.pool, run_id=self.run_id, shared=shared, simulated=simulated
            )
            nodes = allocation_nodes(dep, self.pool.nodes, simulated=simulated)
        options = sbatch_options(
            resolved,
            self.pool,
            name=f"inferx-{resolved.name}"[:128],
            comment=owner_comment(Owner.current(self.run_id)),
            output=shared / OUTPUT_NAME,
            export=sorted(set(engine_env(resolved, self.cli.environ)) & set(self.cli.environ)),
            nodes=nodes,
        )
        job_id = self.cli.submit(script, options)
        output = JobOutput(
            shared / OUTPUT_NAME.replace("%j", str(job_id)),
            LogBuffer(log_file(self.log_dir, resolved)),
        )
        handle: SlurmHandle
        if dep is None:
            address, cleanup = self._docker_handling(job_id)
            handle = SlurmHandle(
                resolved, cli=self.cli, job_id=job_id, output=output, poll_s=self.poll_s,
                replicas=self.pool.replicas, address=address, cleanup=cleanup,
            )  # fmt: skip
        else:
            handle = DeploymentHandle(
                resolved, cli=self.cli, job_id=job_id, output=output, poll_s=self.poll_s,
                router_logs=self.log_dir,
            )  # fmt: skip
        with cleanup_on_failure(handle):
            handle.await_endpoints(self.pool.queue_timeout_s)
        return handle

    def _docker_handling(self, job_id: int) -> tuple[str | None, str | None]:
        """The handle's ``address`` and ``cleanup`` under the docker runtime (none otherwise)."""
        if self.pool.runtime != "docker":
            return None, None
        return self.pool.docker.daemon_address, docker_cleanup(str(job_id), self.pool)

    def cleanup_orphans(self) -> Reaped:
        """Cancel this user's active jobs whose owner is gone (``ownership.orphaned``).

        Jobs of live owners (this process included), of owners on other hosts and
        without an owner are never touched. A job ``scancel`` refuses is reported in
        ``failed`` and the others are still cancelled. Raises LaunchError when ``squeue``
        does not answer.
        """
        stopped, failed = [], {}
        for job in self.cli.active_jobs():
            if not orphaned(comment_owner(job.comment)):
                continue
            try:
                self.cli.cancel(job.job_id)
            except LaunchError as err:
                failed[str(job.job_id)] = str(err)
            else:
                stopped.append(str(job.job_id))
        return Reaped(kind="Slurm job", stopped=tuple(stopped), failed=failed)
