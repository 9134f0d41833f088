"""The preflight's ``ProbeRunner`` on Docker: short-lived containers, no GPUs, no network."""

from __future__ import annotations

import contextlib
from typing import Any

import docker
from docker.errors import APIError, DockerException, NotFound
from requests.exceptions import ConnectionError as RequestsConnectionError
from requests.exceptions import ReadTimeout

from inferx_pipeline.errors import LaunchError
from inferx_pipeline.launch.docker import ensure_image
from inferx_pipeline.launch.docker_args import PullPolicy

LABEL_PREFLIGHT = "inferx.preflight"
TIMED_OUT = 124  # what coreutils `timeout` reports, so a hung probe reads as failed


class DockerProbeRunner:
    """Runs each probe as ``docker run --rm --network none --entrypoint argv[0] IMAGE ...``."""

    def __init__(self, client: docker.DockerClient, pull: PullPolicy = "if-missing") -> None:
        self.client = client
        self.pull = pull

    def digest(self, image: str) -> str:
        """The image's digest, pulled first per the pull policy (``LaunchError`` if absent)."""
        return ensure_image(self.client, image, self.pull)

    def run(self, image: str, argv: tuple[str, ...], timeout_s: float) -> tuple[int, str]:
        """Exit code and merged output; 124 when it outlives ``timeout_s`` seconds."""
        try:
            container = self.client.containers.create(
                image,
                entrypoint=[argv[0]],
                command=list(argv[1:]),
                network_disabled=True,
                labels={LABEL_PREFLIGHT: "1"},
            )
        except (APIError, DockerException) as err:
            raise LaunchError(
                f"preflight of {image}: creating a probe container failed: {err}"
            ) from err
        try:
            return self._start_and_wait(container, timeout_s)
        finally:
            with contextlib.suppress(NotFound, APIError):
                container.remove(force=True)

    def _start_and_wait(self, container: Any, timeout_s: float) -> tuple[int, str]:
        try:
            container.start()
            status = container.wait(timeout=timeout_s)
        except (ReadTimeout, RequestsConnectionError):
            return TIMED_OUT, ""
        except APIError as err:
            return 127, str(err)  # e.g. the probe's program does not exist in the image
        output = container.logs(stdout=True, stderr=True).decode("utf-8", errors="replace")
        return int(status["StatusCode"]), output
