"""Builds the Dagster image of deploy/ on the private engine, cached by the hash of its inputs.

The context comes from ``deploy/build-image --context-only`` (the script operators run),
fed a wheelhouse of ``deploy/requirements.txt`` built on the host and cached under
``/var/tmp/inferx-wheels`` by the requirements' hash (as ``tests/services/engine_images``
caches the simulator's). The image is tagged ``inferx-dagster:<hash>`` of the base image,
Dockerfile, build script, pins, project sources and data, and built only when that tag is
missing; Docker's layer cache keeps the dependency stage across project changes.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import docker

from tests.paths import ROOT
from tests.services import engine_images

DEPLOY = ROOT / "deploy"
DOCKERFILE = DEPLOY / "images" / "dagster" / "Dockerfile"
BUILD_SCRIPT = DEPLOY / "build-image"
REQUIREMENTS = DEPLOY / "requirements.txt"
IMAGE_DATA = ("recipes", "golden_al_distribution", "catalog")
BUILD_TIMEOUT_S = 1200


def wheelhouse() -> Path:
    """Every wheel of deploy/requirements.txt, built on the host once per requirements hash."""
    requirements = REQUIREMENTS.read_text()
    out = engine_images.WHEEL_CACHE / f"dagster-{engine_images.digest([requirements])}"
    if (out / "requirements.txt").is_file():
        return out
    engine_images.WHEEL_CACHE.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="dagster-", dir=engine_images.WHEEL_CACHE))
    engine_images.run_step(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
         "--wheel-dir", str(tmp), "-r", str(REQUIREMENTS)],
        "pip wheel of deploy/requirements.txt",
    )  # fmt: skip
    (tmp / "requirements.txt").write_text(requirements)  # written last: marks the dir complete
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def image_tag(base_tag: str) -> str:
    """``inferx-dagster:<hash>`` of everything that goes into the image."""
    sources = engine_images._tree_digest(
        [ROOT / p for p in (*engine_images.PROJECT_FILES, *IMAGE_DATA)]
    )
    inputs = [base_tag, DOCKERFILE.read_text(), BUILD_SCRIPT.read_text(), REQUIREMENTS.read_text()]
    return f"inferx-dagster:{engine_images.digest([*inputs, sources])}"


def ensure_image(client: docker.DockerClient, base_tag: str) -> str:
    """Build the Dagster image unless its tag exists; return the tag."""
    tag = image_tag(base_tag)
    if engine_images.has_image(client, tag):
        return tag
    with tempfile.TemporaryDirectory(prefix="inferx-dagster-ctx-") as tmp:
        ctx = Path(tmp) / "context"
        engine_images.run_step(
            [str(BUILD_SCRIPT), "--wheelhouse", str(wheelhouse()), "--context-only", str(ctx)],
            "deploy/build-image --context-only",
            env={**os.environ, "PYTHON": sys.executable},
            timeout=BUILD_TIMEOUT_S,
        )
        # Host network for apt's Debian mirror (git); pip installs with --no-index, so no
        # Python package index is ever asked.
        engine_images.build_image(
            client, ctx, tag, base_tag, network_mode="host", timeout_s=BUILD_TIMEOUT_S
        )
    return tag
