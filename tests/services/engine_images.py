"""Builds the two images the Docker tests run, each cached by the hash of its inputs.

- ``inferx-base:bookworm-<hash>``: a debootstrap ``minbase`` Debian with python3 and
  venv, from the machine's own Debian mirror, imported through the Engine API.
- ``inferx-sim:<hash>``: ``deploy/images/sim/Dockerfile`` built ``FROM`` the base by
  the legacy builder, from wheels built on the host (containers reach no package
  index): this project's wheel plus the simulator's runtime dependencies pinned to
  the versions in the host venv (bookworm's CPython 3.11 matches the host's).
- ``inferx-py310:<hash>``: the base with a ``python3`` shim first on PATH that reports
  Python 3.10.12 (and runs the real interpreter for anything else): an image the
  agentic client's Python rule rejects, for the image-preflight tests.

The build context is written to a temp dir holding only what the image needs.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

import docker
from docker.errors import BuildError, ImageNotFound

ROOT = Path(__file__).resolve().parents[2]
SIM_DOCKERFILE = ROOT / "deploy" / "images" / "sim" / "Dockerfile"
SOURCES_LIST = Path("/etc/apt/sources.list.d/debian.sources")
WHEEL_CACHE = Path("/var/tmp/inferx-wheels")
SUITE = "bookworm"
BASE_PACKAGES = ("python3", "python3-venv")  # python3-venv brings pip for the image's venv
# What `inferx sim serve` imports at run time (the project wheel goes in with --no-deps:
# its full dependency list would pull Dagster and pandas into a simulator image).
SIM_RUNTIME_DISTS = (
    "aiohttp",
    "click",
    "httptools",
    "numpy",
    "orjson",
    "prometheus-client",
    "pydantic",
    "pydantic-settings",
    "pyyaml",
    "rich",
    "tokenizers",
    "uvloop",
)
PROJECT_FILES = ("pyproject.toml", "README.md", "inferx_pipeline")
IMAGE_DATA = ("catalog",)


class ImageBuildError(RuntimeError):
    """An image could not be built; the message carries the failing step's output."""


def digest(parts: Iterable[str | bytes]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()[:16]


def _tree_digest(paths: Iterable[Path]) -> str:
    def files() -> Iterable[str | bytes]:
        for top in paths:
            for f in sorted(top.rglob("*") if top.is_dir() else [top]):
                if f.is_file() and "__pycache__" not in f.parts:
                    yield str(f.relative_to(ROOT))
                    yield f.read_bytes()

    return digest(files())


def has_image(client: docker.DockerClient, tag: str) -> bool:
    try:
        client.images.get(tag)
    except ImageNotFound:
        return False
    return True


def run_step(argv: list[str], what: str, **kwargs: object) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        raise ImageBuildError(f"{what} failed ({done.returncode}): {done.stderr[-3000:]}")


def debian_mirror() -> str:
    """The first ``URIs:`` entry of the machine's Debian sources (the only reachable mirror)."""
    for line in SOURCES_LIST.read_text().splitlines():
        if line.startswith("URIs:"):
            return line.split()[1]
    raise ImageBuildError(f"{SOURCES_LIST}: no 'URIs:' line; expected a deb822 Debian source")


def debootstrap_available() -> bool:
    """Whether ``debootstrap`` exists, installing the Debian package when it is missing."""
    if shutil.which("debootstrap", path="/usr/sbin:/usr/bin"):
        return True
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "debootstrap"]):
        subprocess.run(cmd, env=env, capture_output=True, check=False)
    return shutil.which("debootstrap", path="/usr/sbin:/usr/bin") is not None


def base_image_tag() -> str:
    """The base image's tag: its inputs (suite, packages, mirror) hashed."""
    inputs = ["v1", SUITE, "minbase", *BASE_PACKAGES, debian_mirror()]
    return f"inferx-base:{SUITE}-{digest(inputs)}"


def ensure_base_image(client: docker.DockerClient) -> str:
    """Build the base image unless its tag exists (about 45 s the first time); return the tag."""
    tag = base_image_tag()
    if has_image(client, tag):
        return tag
    with tempfile.TemporaryDirectory(prefix="inferx-rootfs-", dir="/var/tmp") as tmp:
        rootfs, tarball = Path(tmp) / "rootfs", Path(tmp) / "rootfs.tar"
        include = ",".join(BASE_PACKAGES)
        run_step(
            ["debootstrap", "--variant=minbase", f"--include={include}", SUITE, str(rootfs),
             debian_mirror()],
            "debootstrap",
        )  # fmt: skip
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc"):
            shutil.rmtree(rootfs / junk, ignore_errors=True)
        run_step(["tar", "-C", str(rootfs), "-cf", str(tarball), "."], "tar of the rootfs")
        repo, _, version = tag.partition(":")
        client.api.import_image_from_file(
            str(tarball), repository=repo, tag=version, changes=["ENV LANG=C.UTF-8"]
        )
    return tag


def _host_constraints() -> str:
    # Pin every transitive dependency to the host venv's version: the image runs what tests ran.
    pins = {
        d.metadata["Name"].lower(): d.version
        for d in importlib.metadata.distributions()
        if d.metadata["Name"] and d.metadata["Name"].lower() != "inferx-pipeline"
    }
    return "".join(f"{name}=={version}\n" for name, version in sorted(pins.items()))


def _requirements() -> str:
    return "".join(f"{d}=={importlib.metadata.version(d)}\n" for d in SIM_RUNTIME_DISTS)


def _dependency_wheels() -> Path:
    """Wheels of the simulator's runtime deps, cached under /var/tmp by their pins."""
    requirements, constraints = _requirements(), _host_constraints()
    out = WHEEL_CACHE / f"deps-{digest([requirements, constraints])}"
    if (out / "requirements.txt").is_file():
        return out
    WHEEL_CACHE.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="deps-", dir=WHEEL_CACHE))
    (tmp / "constraints.txt").write_text(constraints)
    (tmp / "requirements.in").write_text(requirements)
    run_step(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", str(tmp),
         "-c", str(tmp / "constraints.txt"), "-r", str(tmp / "requirements.in")],
        "pip wheel of the simulator's dependencies",
    )  # fmt: skip
    (tmp / "requirements.txt").write_text(requirements)  # written last: marks the dir complete
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def _project_wheel(dest: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="inferx-src-") as src:
        for name in (n for n in PROJECT_FILES if (ROOT / n).exists()):
            copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy2
            copy(ROOT / name, Path(src) / name)
        run_step(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
             "--wheel-dir", str(dest), src],
            "pip wheel of the project",
        )  # fmt: skip


def sim_image_tag(base_tag: str) -> str:
    """The simulator image's tag: base, Dockerfile, dependency pins and project sources hashed."""
    sources = _tree_digest([ROOT / p for p in (*PROJECT_FILES, *IMAGE_DATA)])
    inputs = [base_tag, SIM_DOCKERFILE.read_text(), _requirements(), _host_constraints(), sources]
    return f"inferx-sim:{digest(inputs)}"


def ensure_sim_image(client: docker.DockerClient, base_tag: str) -> str:
    """Build the simulator engine image unless its tag exists; return the tag."""
    tag = sim_image_tag(base_tag)
    if has_image(client, tag):
        return tag
    with tempfile.TemporaryDirectory(prefix="inferx-sim-ctx-") as tmp:
        ctx = Path(tmp)
        shutil.copy2(SIM_DOCKERFILE, ctx / "Dockerfile")
        shutil.copytree(_dependency_wheels(), ctx / "wheels" / "deps")
        _project_wheel(ctx / "wheels" / "project")
        for name in IMAGE_DATA:
            shutil.copytree(ROOT / name, ctx / name)
        build_image(client, ctx, tag, base_tag)
    return tag


def build_image(
    client: docker.DockerClient,
    ctx: Path,
    tag: str,
    base_tag: str,
    *,
    network_mode: str = "none",
    buildargs: dict[str, str] | None = None,
    timeout_s: int | None = None,
) -> None:
    """``docker build`` of ``ctx`` as ``tag`` FROM ``base_tag`` (legacy builder, docker-py).

    ``network_mode`` "none" by default: pip must stay offline; ImageBuildError with the
    build log's tail on failure.
    """
    try:
        client.images.build(
            path=str(ctx), tag=tag, buildargs={"BASE_IMAGE": base_tag, **(buildargs or {})},
            network_mode=network_mode, rm=True, forcerm=True, timeout=timeout_s,
        )  # fmt: skip
    except BuildError as err:
        log = "".join(json.dumps(chunk) for chunk in err.build_log)[-3000:]
        raise ImageBuildError(f"docker build of {tag} failed: {err.msg}\n{log}") from err


OLD_PYTHON_SHIM = """#!/bin/sh
# Reports an old Python for version questions; anything else runs the real interpreter.
case "$*" in
  *sys.version*|--version|-V) echo "Python 3.10.12"; exit 0 ;;
esac
exec /usr/bin/python3 "$@"
"""
OLD_PYTHON_DOCKERFILE = """ARG BASE_IMAGE
FROM ${BASE_IMAGE}
COPY python3 /usr/local/bin/python3
RUN chmod 0755 /usr/local/bin/python3
"""


def ensure_old_python_image(client: docker.DockerClient, base_tag: str) -> str:
    """Build the Python-3.10-reporting image unless its tag exists (a few seconds); return it."""
    tag = f"inferx-py310:{digest([base_tag, OLD_PYTHON_SHIM, OLD_PYTHON_DOCKERFILE])}"
    if has_image(client, tag):
        return tag
    with tempfile.TemporaryDirectory(prefix="inferx-py310-ctx-") as tmp:
        (Path(tmp) / "Dockerfile").write_text(OLD_PYTHON_DOCKERFILE)
        (Path(tmp) / "python3").write_text(OLD_PYTHON_SHIM)
        build_image(client, Path(tmp), tag, base_tag)
    return tag


def main() -> None:
    """Build both images on the daemon ``DOCKER_HOST`` names (``scripts/build-sim-image``)."""
    client = docker.from_env()
    if not debootstrap_available():
        raise SystemExit("debootstrap is missing and could not be installed")
    print(ensure_sim_image(client, ensure_base_image(client)))


if __name__ == "__main__":
    main()
