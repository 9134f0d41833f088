"""The lm-eval venv for tests that run the real harness: ``scripts/lm-eval-env`` builds it
once per machine (minutes, the first time) and prints its python."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.paths import ROOT
from tests.services.required import unavailable

LM_EVAL_BUILD_TIMEOUT_S = 900.0


@pytest.fixture(scope="session")
def lm_eval_python() -> Path:
    """The lm-eval venv's python: ``scripts/lm-eval-env`` builds it once per machine.

    Fails the requesting test when it cannot be built.
    """
    try:
        done = subprocess.run(
            [str(ROOT / "scripts" / "lm-eval-env")],
            check=True,
            capture_output=True,
            text=True,
            timeout=LM_EVAL_BUILD_TIMEOUT_S,
        )
    except (OSError, subprocess.SubprocessError) as err:
        unavailable("lm-eval", f"scripts/lm-eval-env failed: {err}\n{getattr(err, 'stderr', '')}")
    return Path(done.stdout.strip())
