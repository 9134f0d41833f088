"""Runs a ServerSpec as a container through the Docker Engine API (docker-py, no CLI).

Each container carries the labels ``inferx.job``, ``inferx.fingerprint``, ``inferx.run``
and ``inferx.owner`` (the process running the sweep, ``ownership.Owner``);
``cleanup_orphans`` finds the containers whose owner is gone (a crashed or killed run)
by those labels and removes them (keeping their logs), never those of a live owner
(this process included) nor a container that names no owner. The log is streamed into
a file while the container runs, so it survives the container's removal on ``stop()``.
A container whose log cannot be read (a daemon hiccup, a log driver such as ``none``)
is removed all the same, and the failure is written where its log would be.
"""

from __future__ import annotations

import logging
import os
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from requests import RequestException

from inferx_pipeline.errors import LaunchError
from inferx_pipeline.launch.base import (
    LogBuffer,
    ServerHandle,
    cleanup_on_failure,
    free_port,
    log_file,
    refuse_deployment,
)
from inferx_pipeline.launch.docker_args import (
    DEFAULT_CONTAINER_PORT,
    LABEL_RUN,
    DockerOptions,
    PullPolicy,
    container_kwargs,
)
from inferx_pipeline.launch.ownership import Owner, Reaped, orphaned
from inferx_pipeline.launch.secrets import secret_values
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.strict import FrozenModel

LOG_JOIN_S = 10.0
KILLED = 137  # 128 + SIGKILL: what a container removed from under us most likely met
LABEL_OWNER = "inferx.owner"
# What a call to the daemon raises when it fails: its answer, or no answer at all.
DAEMON_ERRORS = (DockerException, RequestException)

log = logging.getLogger(__name__)


class ContainerSummary(FrozenModel):
    """A container as the daemon's list answers it (no inspect per container)."""

    id: str
    name: str
    labels: dict[str, str]


def labelled_containers(client: docker.DockerClient, label: str) -> list[ContainerSummary]:
    """The containers, running or not, carrying ``label`` (``key`` or ``key=value``).

    One list call, never an inspect per container: docker-py's ``containers.list``
    inspects each one it lists and raises NotFound for one removed meanwhile (its own
    ``--rm``, another sweep), which would fail a scan that only looks for orphans.
    """
    return [
        ContainerSummary(
            id=entry["Id"], name=entry["Names"][0].lstrip("/"), labels=entry.get("Labels") or {}
        )
        for entry in client.api.containers(all=True, filters={"label": label})
    ]


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
        try:
            stream = self.container.logs(stream=True, follow=True, stdout=True, stderr=True)
            for line in _lines(stream):
                self.log.append(line)
        except (*DAEMON_ERRORS, OSError) as err:
            self._report(f"reading its log failed: {err}")

    def _report(self, what: str) -> None:
        """Note a failed step in the server's log (kept as its artifact) and the logger."""
        self.log.append(f"inferx: container {self.container_id[:12]}: {what}")
        log.warning("server %s: container %s: %s", self.spec.name, self.container_id[:12], what)

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
        """Stop the container, then remove it whatever failed before (idempotent).

        A step the daemon fails is reported in the server's log and the logger, not
        raised: the removal is always tried, and the log always closed.
        """
        if self._stopped:
            return
        self._stopped = True
        try:
            for step, action in (
                ("stopping", lambda: self.container.stop(timeout=int(self.grace_s))),
                ("reading its exit state", self._state),
            ):
                self._try(step, action)
            if self._follower.is_alive():
                self._follower.join(LOG_JOIN_S)
            self._try("removing", lambda: self.container.remove(force=True))
        finally:
            self.log.close()

    def _try(self, step: str, action: Callable[[], object]) -> None:
        try:
            action()
        except NotFound:
            return  # already gone: nothing left to stop or remove
        except DAEMON_ERRORS as err:
            self._report(f"{step} failed: {err}")


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
        refuse_deployment(spec, "docker")
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

    def cleanup_orphans(self, run_id: str | None = None) -> Reaped:
        """Remove the containers whose owner is gone (of run ``run_id``, or of any run).

        Containers of live owners (this process included, or one on another host, which
        cannot be checked from here) and containers naming no owner are never touched.
        Each orphan's log is saved under ``log_dir`` first (or why it could not be read);
        a container the daemon will not remove is reported in ``failed`` and the others
        are still removed. Raises LaunchError when the daemon cannot list containers.
        """
        label = LABEL_RUN if run_id is None else f"{LABEL_RUN}={run_id}"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        try:
            found = labelled_containers(self.client, label)
        except DAEMON_ERRORS as err:
            raise LaunchError(f"listing containers of dead runs failed: {err}") from err
        removed, failed = [], {}
        for container in found:
            labels = container.labels
            owner = Owner.from_label(labels.get(LABEL_RUN, ""), labels.get(LABEL_OWNER, ""))
            if not orphaned(owner):
                continue
            self._save_orphan_log(container)
            try:
                self.client.api.remove_container(container.id, force=True)
            except NotFound:
                pass  # removed meanwhile (its own --rm, another sweep): gone all the same
            except DAEMON_ERRORS as err:
                failed[container.name] = str(err)
                continue
            removed.append(container.name)
        return Reaped(kind="container", stopped=tuple(removed), failed=failed)

    def _save_orphan_log(self, container: ContainerSummary) -> None:
        path = self.log_dir / f"orphan-{container.name}.log"
        try:
            path.write_bytes(self.client.api.logs(container.id))
        except DAEMON_ERRORS as err:
            # Reported where the log would be: the container goes anyway.
            log.warning("orphan container %s: reading its log failed: %s", container.name, err)
            path.write_text(
                f"inferx: reading the log of container {container.name} failed: {err}\n"
            )
