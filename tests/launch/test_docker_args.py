"""The docker-py container arguments built from a ServerSpec (pure, no daemon)."""

from __future__ import annotations

from pathlib import Path

from docker.types import DeviceRequest, Ulimit

from inferx_pipeline.launch.docker import endpoint_host, image_digest
from inferx_pipeline.launch.docker_args import DockerOptions, container_kwargs, container_name
from inferx_pipeline.launch.spec import GpuRequest
from tests.launch.specs import make_spec

SPEC = make_spec(
    ("vllm", "serve", "org/model", "--port", "{port}", "--tp", "8"),
    name="dsr1 fp8/h200",
    image="vllm/vllm-openai:v0.11.0",
    env={"VLLM_X": "1"},
    secret_env=("HF_TOKEN",),
    gpus=GpuRequest(vendor="nvidia", count=8),
    labels={"team": "perf", "inferx.run": "spoofed"},
)


def test_host_network_nvidia_container_arguments() -> None:
    kwargs = container_kwargs(
        SPEC, port=31234, run_id="run-1", options=DockerOptions(hf_cache=Path("/data/hf")),
        secrets={"HF_TOKEN": "hf_x"},
    )  # fmt: skip
    name = kwargs.pop("name")
    assert name.startswith("inferx-dsr1-fp8-h200-run-1-")
    assert kwargs == {
        "image": "vllm/vllm-openai:v0.11.0",
        "entrypoint": ["vllm"],
        "command": ["serve", "org/model", "--port", "31234", "--tp", "8"],
        "labels": {
            "team": "perf",
            "inferx.run": "run-1",
            "inferx.job": "dsr1 fp8/h200",
            "inferx.fingerprint": "f" * 64,
        },
        "environment": {
            "HF_HUB_OFFLINE": "1",
            "HF_HOME": "/root/.cache/huggingface",
            "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7",
            "VLLM_X": "1",
            "HF_TOKEN": "hf_x",
        },
        "init": True,
        "ipc_mode": "host",
        "shm_size": "16g",
        "ulimits": [
            Ulimit(name="memlock", soft=-1, hard=-1),
            Ulimit(name="stack", soft=64 * 1024 * 1024, hard=64 * 1024 * 1024),
        ],
        "volumes": {"/data/hf": {"bind": "/root/.cache/huggingface", "mode": "rw"}},
        "network_mode": "host",
        "device_requests": [DeviceRequest(count=8, capabilities=[["gpu"]])],
    }


def test_published_port_amd_container_arguments() -> None:
    spec = SPEC.model_copy(update={"gpus": GpuRequest(vendor="amd", count=8), "secret_env": ()})
    kwargs = container_kwargs(
        spec, port=8000, run_id="r", options=DockerOptions(network="publish"), secrets={}
    )
    assert kwargs["ports"] == {"8000/tcp": ("127.0.0.1", None)}
    assert "network_mode" not in kwargs
    assert kwargs["devices"] == ["/dev/kfd:/dev/kfd:rwm", "/dev/dri:/dev/dri:rwm"]
    assert kwargs["environment"] == {"HF_HUB_OFFLINE": "1", "VLLM_X": "1"}
    assert kwargs["volumes"] == {}


def test_container_names_are_valid_and_unique() -> None:
    first, second = container_name(SPEC, "r" * 40), container_name(SPEC, "r" * 40)
    assert first != second
    assert all(c.isalnum() or c in "_.-" for c in first)


def test_endpoint_host_and_image_digest() -> None:
    assert endpoint_host("http+docker://localhost") == "127.0.0.1"
    assert endpoint_host("https://gpu-h200-01:2376") == "gpu-h200-01"
    assert image_digest({"Id": "sha256:a", "RepoDigests": ["r@sha256:b"]}) == "r@sha256:b"
    assert image_digest({"Id": "sha256:a", "RepoDigests": []}) == "sha256:a"
