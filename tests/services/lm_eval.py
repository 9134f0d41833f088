"""The lm-eval venv for tests that run the real harness: ``scripts/lm-eval-env`` builds it
once per machine (minutes, the first time) and prints its python."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.paths import ROOT
from tests.services.required import script_python

LM_EVAL_BUILD_TIMEOUT_S = 900.0


@pytest.fixture(scope="session")
def lm_eval_python() -> Path:
    """The lm-eval venv's python: ``scripts/lm-eval-env`` builds it once per machine.

    Fails the requesting test when it cannot be built.
    """
    return script_python(ROOT / "scripts" / "lm-eval-env", "lm-eval", LM_EVAL_BUILD_TIMEOUT_S)
