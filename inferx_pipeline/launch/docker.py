"""Runs a ServerSpec as a container through the Docker Engine API (docker-py, no CLI).

Each container carries the labels ``inferx.job``, ``inferx.fingerprint``, ``inferx.run``
and ``inferx.owner`` (the process running the sweep, ``ownership.Owner``);
``cleanup_orphans`` finds the containers a crashed or killed run left behind by those
labels and removes them (keeping their logs), never those of a sweep still running in
another process. The log is streamed into a
file while the container runs, so it survives the container's removal on ``stop()``.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, DockerException, ImageNotFound, NotFound

from inferx_pipeline.errors import LaunchError
from inferx_pipeline.launch.base import LogBuffer, ServerHandle, cleanup_on_failure, log_file
from inferx_pipeline.launch.docker_args import (
    DEFAULT_CONTAINER_PORT,
    LABEL_RUN,
    DockerOptions,
    PullPolicy,
    container_kwargs,
)
from inferx_pipeline.launch.ownership import Owner
from inferx_pipeline.launch.secrets import secret_values
from inferx_pipeline.launch.spec import ServerSpec

LOG_JOIN_S = 10.0
KILLED = 137  # 128 + SIGKILL: what a container removed from under us most likely met
LABEL_OWNER = "inferx.owner"


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on this machine right now (for host-network containers)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def endpoint_host(docker_url: str) -> str:
    """Where a server in a container is reached: the Docker host's name, or loopback."""
    parsed = urllib.parse.urlparse(docker_url)
    if parsed.scheme in ("tcp", "http", "https") and parsed.hostname:
        return parsed.hostname
    return "127.0.0.1"  # unix socket (docker-py: http+docker://localhost) or ssh tunnel


def ensure_image(client: docker.DockerClient, image: str, policy: PullPolicy) -> str:
    """Make ``image`` present per ``policy``; return its digest (repo digest, else image id).

    Raises ``LaunchError`` when the image is absent under ``never`` or a pull fails.
    """
    try:
        found = None if policy == "always" else client.images.get(image)
    except ImageNotFound:
        if policy == "never":
            raise LaunchError(
                f"image {image} is not on the Docker host and the pull policy is 'never'; "
                "pull it there or set pull: if-missing"
            ) from None
        found = None
    if found is None:
        try:
            found = client.images.pull(image)
        except (APIError, DockerException) as err:
            raise LaunchError(f"pulling image {image} failed: {err}") from err
    return image_digest(found.attrs)


def image_digest(attrs: Mapping[str, Any]) -> str:
    """The image's registry digest when it has one, else its local content id."""
    repo_digests = attrs.get("RepoDigests") or []
    return str(repo_digests[0] if repo_digests else attrs["Id"])


def _lines(chunks: Iterable[bytes]) -> Iterator[str]:
    # docker's log stream yields arbitrary chunks; reassemble whole lines.
    pending = b""
    for chunk in chunks:
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            yield line.decode("utf-8", errors="replace")
    if pending:
        yield pending.decode("utf-8", errors="replace")


class DockerHandle(ServerHandle):
    """A container started by ``DockerLauncher``; removed on ``stop()``, log kept."""

    def __init__(
        self, spec: ServerSpec, container: Any, log: LogBuffer, grace_s: float, image_digest: str
    ) -> None:
        super().__init__(spec, "", log)
        self.container = container
        self.container_id: str = container.id
        self.image_digest = image_digest
        self.grace_s = grace_s
        self._final: tuple[int, bool] | None = None  # (exit code, OOM-killed) once exited
        self._stopped = False
        self._follower = threading.Thread(target=self._follow, name=f"log-{spec.name}", daemon=True)

    def follow_logs(self) -> None:
        """Start copying the container's output into the log (call once, after start)."""
        self._follower.start()

    def _follow(self) -> None:
        with contextlib.suppress(DockerException, OSError):
            stream = self.container.logs(stream=True, follow=True, stdout=True, stderr=True)
            for line in _lines(stream):
                self.log.append(line)

    def _state(self) -> tuple[int, bool] | None:
        if self._final is not None:
            return self._final
        try:
            self.container.reload()
        except NotFound:
            self._final = (KILLED, False)
            return self._final
        state = self.container.attrs["State"]
        if state["Status"] in ("exited", "dead"):
            self._follower.join(LOG_JOIN_S)  # its last lines belong to the exit
            self._final = (int(state["ExitCode"]), bool(state.get("OOMKilled")))
        return self._final

    def exit_status(self) -> int | None:
        state = self._state()
        return None if state is None else state[0]

    @property
    def oom_killed(self) -> bool:
        state = self._state()
        return state is not None and state[1]

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        with contextlib.suppress(NotFound, APIError):
            self.container.stop(timeout=int(self.grace_s))
        self._state()
        if self._follower.is_alive():
            self._follower.join(LOG_JOIN_S)
        with contextlib.suppress(NotFound):
            self.container.remove(force=True)
        self.log.close()


class DockerLauncher:
    """Starts servers as containers on one Docker host.

    ``run_id`` labels every container of this run; ``environ`` (default: this process's
    environment, read at construction) is where secrets named by a spec come from.
    ``choose_port`` picks the host port for host-network containers.
    """

    def __init__(
        self,
        client: docker.DockerClient,
        *,
        run_id: str,
        log_dir: Path,
        options: DockerOptions | None = None,
        environ: Mapping[str, str] | None = None,
        choose_port: Callable[[], int] = free_port,
    ) -> None:
        self.client = client
        self.run_id = run_id
        self.log_dir = log_dir
        self.options = options or DockerOptions()
        self.environ = dict(os.environ if environ is None else environ)
        self.choose_port = choose_port
        self.server_host = endpoint_host(str(client.api.base_url))

    def start(self, spec: ServerSpec) -> DockerHandle:
        """Create and start ``spec``'s container; return once it runs (not yet healthy).

        Raises ``LaunchError`` when the image is missing or the daemon refuses; on any
        failure the container is already removed.
        """
        digest = ensure_image(self.client, spec.image, self.options.pull)
        port = spec.port or (
            self.choose_port() if self.options.network == "host" else DEFAULT_CONTAINER_PORT
        )
        kwargs = container_kwargs(
            spec,
            port=port,
            run_id=self.run_id,
            options=self.options,
            secrets=secret_values(spec, self.environ),
        )
        kwargs["labels"] = {**kwargs["labels"], LABEL_OWNER: Owner.current(self.run_id).label}
        log = LogBuffer(log_file(self.log_dir, spec))
        try:
            container = self.client.containers.create(**kwargs)
        except (APIError, DockerException) as err:
            log.close()
            raise LaunchError(f"server {spec.name}: creating its container failed: {err}") from err
        handle = DockerHandle(spec, container, log, self.options.grace_s, digest)
        with cleanup_on_failure(handle):
            try:
                container.start()
            except APIError as err:
                raise LaunchError(
                    f"server {spec.name}: starting its container failed: {err}"
                ) from err
            handle.follow_logs()
            handle.base_url = self._base_url(container, port)
        return handle

    def _base_url(self, container: Any, port: int) -> str:
        if self.options.network == "host":
            return f"http://{self.server_host}:{port}"
        container.reload()
        binding = container.attrs["NetworkSettings"]["Ports"][f"{port}/tcp"][0]
        return f"http://{self.server_host}:{binding['HostPort']}"

    def cleanup_orphans(self, run_id: str | None = None) -> list[str]:
        """Remove containers left by an earlier run (``run_id``, or any run when None).

        This launcher's own run is never touched, nor a run whose owner is another live
        process (or one on another host, which cannot be checked from here). Each
        orphan's log is saved under ``log_dir`` first. Returns the removed containers' names.
        """
        label = LABEL_RUN if run_id is None else f"{LABEL_RUN}={run_id}"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        removed = []
        for container in self.client.containers.list(all=True, filters={"label": label}):
            run = container.labels.get(LABEL_RUN, "")
            if run == self.run_id or _owned_elsewhere(run, container.labels.get(LABEL_OWNER)):
                continue
            with contextlib.suppress(NotFound, APIError):
                (self.log_dir / f"orphan-{container.name}.log").write_bytes(container.logs())
                container.remove(force=True)
                removed.append(container.name)
        return removed


def _owned_elsewhere(run_id: str, label: str | None) -> bool:
    # This process's other runs are over (a sweep runs one run at a time): orphans.
    owner = Owner.from_label(run_id, label) if label else None
    return owner is not None and owner.pid != os.getpid() and owner.alive()
