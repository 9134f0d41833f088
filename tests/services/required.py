"""What a real-service fixture does when its service cannot be had: the test fails.

No fixture skips, in CI or elsewhere: a test that needs Docker, PostgreSQL, Slurm, a real
engine or a browser either runs against the real thing or fails naming what was missing.
A person without a service deselects its tests by marker (``-m 'not docker'``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import NoReturn

import pytest


def unavailable(service: str, reason: str) -> NoReturn:
    """Fail the requesting test: ``service`` could not be started, and why."""
    pytest.fail(
        f"{service} is required and could not be started: {reason} "
        "(scripts/check installs and starts every service; deselect by marker to run without it)"
    )


def script_python(script: Path, service: str, timeout_s: float) -> Path:
    """The python a venv script (``scripts/*-env``) builds or reuses and prints last;
    the requesting test fails, naming ``service`` and the script's error, otherwise."""
    try:
        done = subprocess.run(
            [str(script)], check=True, capture_output=True, text=True, timeout=timeout_s
        )
    except (OSError, subprocess.SubprocessError) as err:
        output = getattr(err, "stderr", "") or ""
        unavailable(service, f"{script.name} failed: {err}\n{output[-2000:]}")
    return Path(done.stdout.strip().splitlines()[-1])
