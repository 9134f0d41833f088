"""The router in front of a deployment's workers, as a ServerSpec run on the submit host.

::

    spec = router_spec(server, endpoints, port=free_port(), metrics_port=free_port())
    router = SubprocessLauncher(log_dir).start(spec)     # python -m sglang_router.launch_router

The router is a released one (``sglang-router`` or ``vllm-router``, pinned project
dependencies, see ``engines/multinode.py``) started with this interpreter. It listens on
loopback; the workers are reached at their nodes' addresses. Each prefill worker's
bootstrap port (SGLang's KV handshake) is the port after its HTTP port (``slurm_deploy``).
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

from inferx_pipeline.launch.spec import ServerSpec, WorkerSpec

# A router waits this long for its workers at start; they are healthy already.
WORKER_STARTUP_S = 60


def bootstrap_port(url: str) -> int:
    """The bootstrap port of the prefill worker serving HTTP at ``url``: the next port."""
    port = urlsplit(url).port
    assert port is not None  # endpoints always carry their port
    return port + 1


def router_argv(
    spec: ServerSpec, endpoints: Sequence[tuple[WorkerSpec, str]], *, port: int, metrics_port: int
) -> tuple[str, ...]:
    """The router's command for ``spec``'s deployment over ``endpoints`` (worker, URL) (pure)."""
    assert spec.deployment is not None
    router = spec.deployment.router
    argv = ["python", "-m", router.module, "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--prometheus-host", "127.0.0.1", "--prometheus-port", str(metrics_port)]
    argv += ["--policy", "round_robin", "--worker-startup-timeout-secs", str(WORKER_STARTUP_S)]
    if router.mode == "regular":
        return (*argv, "--worker-urls", *(url for _, url in endpoints))
    argv.append("--pd-disaggregation" if router.mode == "pd-sglang" else "--vllm-pd-disaggregation")
    for worker, url in endpoints:
        if worker.role == "prefill":
            argv += ["--prefill", url]
            if router.mode == "pd-sglang":
                argv.append(str(bootstrap_port(url)))
        else:
            argv += ["--decode", url]
    return tuple(argv)


def router_spec(
    spec: ServerSpec, endpoints: Sequence[tuple[WorkerSpec, str]], *, port: int, metrics_port: int
) -> ServerSpec:
    """A ServerSpec that runs ``spec``'s router on this host at ``port`` (pure)."""
    assert spec.deployment is not None
    router = spec.deployment.router
    return spec.model_copy(
        update={
            "name": f"{spec.name}/{router.name}",
            "argv": router_argv(spec, endpoints, port=port, metrics_port=metrics_port),
            "env": {},
            "secret_env": (),
            "port": port,
            "health_path": "/health",
            "deployment": None,
        }
    )
