"""The lm-eval venv for tests that run the real harness: ``scripts/lm-eval-env`` builds it
once per machine (minutes, the first time) and prints its python."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.paths import ROOT

LM_EVAL_BUILD_TIMEOUT_S = 900.0


@pytest.fixture(scope="session")
def lm_eval_python() -> Path:
    """The lm-eval venv's python: ``scripts/lm-eval-env`` builds it once per machine.

    Skips when it cannot be built, except under ``CI=true``, where that fails.
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
        reason = f"scripts/lm-eval-env failed: {err}\n{getattr(err, 'stderr', '')}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return Path(done.stdout.strip())
