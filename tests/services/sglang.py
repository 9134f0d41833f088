"""Session fixture for SGLang's own argument checks: the venv of ``scripts/sglang-env``.

The venv is built once per machine (cached under ``$INFERX_CACHE`` by the hash of the
script) and reused. A failed build fails the tests that need it (``required.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.paths import ROOT
from tests.services.required import script_python

BUILD_TIMEOUT_S = 900.0


@pytest.fixture(scope="session")
def sglang_python() -> Path:
    """The python of the SGLang venv, built or reused."""
    return script_python(ROOT / "scripts" / "sglang-env", "SGLang", BUILD_TIMEOUT_S)


@pytest.fixture(scope="session")
def sglang_host_file(sglang_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A local host file naming SGLang alone (as scripts/cpu-host writes it)."""
    path = tmp_path_factory.mktemp("sglang-host") / "local-host.yaml"
    host = {
        "source": "tests/services/sglang.py",
        "programs": {"sglang": {"path": str(sglang_python.parent / "sglang"), "package": "sglang"}},
    }
    path.write_text(yaml.safe_dump(host))
    return path
