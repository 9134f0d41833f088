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

import time
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

from inferx_pipeline.errors import ServerStartTimeoutError
from inferx_pipeline.launch.base import LOG_TAIL_LINES, ServerHandle, free_port, http_ok
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


def await_workers(
    handle: ServerHandle,
    endpoints: Sequence[tuple[WorkerSpec, str]],
    *,
    deadline: float,
    logs: str,
    pause: Callable[[], None],
) -> None:
    """Poll every worker's health (``pause`` between rounds) until all answer 2xx.

    Raises ``handle``'s ServerExitedError as soon as it ended, and ServerStartTimeoutError
    naming the workers still down at ``deadline`` (monotonic) and where ``logs`` are.
    """
    waiting = dict(endpoints)
    while waiting:
        handle.raise_if_exited()
        for worker, url in list(waiting.items()):
            if http_ok(url + handle.spec.health_path):
                del waiting[worker]
        if not waiting:
            return
        if time.monotonic() >= deadline:
            names = ", ".join(f"{w.label} at {url}" for w, url in waiting.items())
            raise ServerStartTimeoutError(
                f"server {handle.spec.name}: {names} not healthy within "
                f"{handle.spec.startup_timeout_s:g} s; raise startup_timeout_s or read {logs}",
                log_tail=handle.logs(LOG_TAIL_LINES),
            )
        pause()


def start_router(
    spec: ServerSpec,
    endpoints: Sequence[tuple[WorkerSpec, str]],
    start: Callable[[ServerSpec], ServerHandle],
) -> ServerHandle:
    """``spec``'s router over healthy ``endpoints``, started with ``start`` on free ports."""
    return start(router_spec(spec, endpoints, port=free_port(), metrics_port=free_port()))
