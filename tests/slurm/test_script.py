"""The batch job of a server group, pure: sbatch options, runtimes, GPU access, replica lines,
environment names and values as the shell reads them, the owner in a job's comment."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from inferx_pipeline.errors import LaunchError
from inferx_pipeline.launch.ownership import Owner
from inferx_pipeline.launch.slurm import comment_owner, listen_on_all, owner_comment, parse_comment
from inferx_pipeline.launch.slurm_pools import SlurmPool
from inferx_pipeline.launch.slurm_script import batch_script, sbatch_options
from inferx_pipeline.launch.spec import GpuRequest, ServerSpec
from tests.launch.specs import make_spec
from tests.slurm.conftest import cluster_pool

IMAGE = "vllm/vllm-openai:v0.11.0"


def _spec(vendor: str = "nvidia", count: int = 8) -> ServerSpec:
    return make_spec(
        ("vllm", "serve", "{model}", "--host", "127.0.0.1", "--port", "{port}"),
        image=IMAGE,
        gpus=GpuRequest.model_validate({"vendor": vendor, "count": count}),
        env={"VLLM_USE_V1": "1"},
        secret_env=("HF_TOKEN",),
    )


def _pool(**fields: object) -> SlurmPool:
    store = {"models": {"Qwen/Qwen3-0.6B": "/lustre/models/qwen3"}, "hf_cache": "/lustre/hf"}
    return cluster_pool(account="bench", qos="normal", model_store=store, **fields)


def test_sbatch_options_carry_the_pool_and_never_requeue() -> None:
    options = sbatch_options(
        _spec(), _pool(replicas=2), name="inferx-x", comment="inferx run=r",
        output=Path("/o/%j"), export=["HF_TOKEN", "PATH"],
    )  # fmt: skip
    assert options == [
        "--job-name=inferx-x", "--comment=inferx run=r", "--partition=gpu", "--time=5",
        "--nodes=2", "--ntasks-per-node=1", "--output=/o/%j", "--no-requeue",
        "--export=HF_TOKEN,PATH", "--account=bench", "--qos=normal", "--gres=gpu:8",
    ]  # fmt: skip
    cpu = sbatch_options(
        _spec(count=0), _pool(), name="n", comment="c", output=Path("o"), export=["PATH"]
    )
    assert not any(o.startswith("--gres") for o in cpu)


def test_pyxis_runs_the_image_with_the_model_store_mounted() -> None:
    script = batch_script(_spec(), _pool(runtime="pyxis"), run_id="r")
    assert "--container-image=vllm/vllm-openai:v0.11.0" in script
    assert (
        "--container-mounts=/lustre/hf:/lustre/hf,/lustre/models/qwen3:/lustre/models/qwen3"
        in script
    )
    assert "export VLLM_USE_V1=1\n" in script and "HF_TOKEN" not in script


def test_docker_passes_env_and_secrets_by_name_and_the_vendors_gpus() -> None:
    nvidia = batch_script(_spec(), _pool(runtime="docker"), run_id="r")
    assert "--env=HF_HOME --env=HF_HUB_OFFLINE --env=HF_TOKEN --env=VLLM_USE_V1" in nvidia
    assert "'--gpus=device={cuda}'" in nvidia and "'--name=inferx-{replica}'" in nvidia
    # argv[0] is the entrypoint, the rest follows the image (as under the Docker launcher)
    assert "--entrypoint=vllm" in nvidia and "vllm/vllm-openai:v0.11.0 serve '{model}'" in nvidia
    amd = batch_script(_spec("amd"), _pool(runtime="docker"), run_id="r")
    assert "--device=/dev/kfd:/dev/kfd:rwm --device=/dev/dri:/dev/dri:rwm" in amd
    assert "--env=HIP_VISIBLE_DEVICES" in amd and "--gpus" not in amd


def test_docker_containers_are_labelled_with_the_job_and_removed_when_the_replica_ends() -> None:
    pool = _pool(runtime="docker", docker={"host": "unix:///d.sock", "devices": ["/x/kfd"]})
    script = batch_script(_spec("none", 0), pool, run_id="run-7")
    assert "'--label=inferx.slurm_job={job}'" in script and "--label=inferx.run=run-7" in script
    assert "--device=/x/kfd" in script and "--env=HIP_VISIBLE_DEVICES" in script  # any vendor
    assert "export DOCKER_HOST=unix:///d.sock\n" in script
    trap = next(line for line in script.splitlines() if line.strip().startswith("trap"))
    assert "label=inferx.slurm_job=$SLURM_JOB_ID | DOCKER_HOST=unix:///d.sock xargs" in trap


def test_apptainer_asks_for_the_vendors_gpu_support() -> None:
    nvidia = batch_script(_spec(), _pool(runtime="apptainer"), run_id="r")
    assert "apptainer exec --nv --bind=/lustre/hf" in nvidia
    amd = batch_script(_spec("amd"), _pool(runtime="apptainer"), run_id="r")
    assert "apptainer exec --rocm" in amd


def test_the_replica_fills_port_and_gpus_and_maps_rocr_to_hip(tmp_path: Path) -> None:
    spec = make_spec(("bash", "-c", 'echo "port={port} hip=$HIP_VISIBLE_DEVICES"'), port=8123)
    script = batch_script(spec, _pool(), run_id="r")
    function = script.split("export -f inferx_replica")[0].split("\n", 3)[3]
    env = {"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "7", "SLURM_PROCID": "1",
           "SLURMD_NODENAME": "node2", "ROCR_VISIBLE_DEVICES": "2,3"}  # fmt: skip
    done = subprocess.run(
        ["bash", "-c", function + 'inferx_replica "$@"', "x", *spec.argv],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert done.stdout.splitlines() == [
        "INFERX_SLURM_REPLICA rank=1 node=node2 port=8123 gpus=2,3",
        "port=8123 hip=2,3",
    ]


def test_engines_listen_on_every_address_under_slurm() -> None:
    assert listen_on_all(("x", "--host", "127.0.0.1", "--host=::1")) == (
        "x", "--host", "0.0.0.0", "--host=0.0.0.0",
    )  # fmt: skip


def test_owner_comment_round_trips_and_foreign_comments_are_not_ours() -> None:
    owner = Owner.current("run-1")
    comment = owner_comment(owner)
    assert parse_comment(comment)["run"] == "run-1"
    assert comment_owner(comment) == owner  # host, PID and the PID's start time
    assert comment_owner("someone else's job") is None
    assert comment_owner("inferx run=old host=h pid=12") is None  # no start time: unprovable


def test_an_env_name_that_is_not_a_posix_name_is_refused_naming_it() -> None:
    # model_copy skips the spec's own check, as the launcher's resolve() does.
    spec = _spec().model_copy(update={"env": {"OK": "1", "A;touch /tmp/x": "1"}})
    with pytest.raises(LaunchError, match=r"environment variable name 'A;touch /tmp/x' is not"):
        batch_script(spec, _pool(), run_id="r")
    with pytest.raises(LaunchError, match="name '1A' is not"):
        batch_script(_spec().model_copy(update={"secret_env": ("1A",)}), _pool(), run_id="r")


def test_env_values_reach_the_job_as_written_whatever_they_hold(tmp_path: Path) -> None:
    odd = {
        "QUOTES": 'it\'s "quoted"',
        "SHELL_SYNTAX": "$(touch pwned); `id` && $HOME | > x",
        "LINES": "one\ntwo\n",
        "EMPTY": "",
        "UNICODE": "ünï ✓",
    }
    spec = make_spec(("true",), env=odd)
    # A stand-in srun: the job script execs it with the batch environment; it dumps that.
    srun = tmp_path / "srun"
    srun.write_text('#!/bin/bash\nexec env -0 > "$DUMP"\n')
    srun.chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "DUMP": str(tmp_path / "env")}
    script = batch_script(spec, _pool(), run_id="r")
    subprocess.run(["bash", "-c", script], env=env, cwd=tmp_path, check=True, timeout=30)
    pairs = (item.split("=", 1) for item in (tmp_path / "env").read_text().split("\0") if item)
    seen = dict(pairs)
    assert {name: seen.get(name) for name in odd} == odd
    assert not (tmp_path / "pwned").exists()


def test_more_replicas_than_nodes_is_refused() -> None:
    with pytest.raises(ValueError, match="replicas 3 need as many nodes; nodes is 2"):
        cluster_pool(replicas=3)
