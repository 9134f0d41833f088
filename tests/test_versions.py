"""The installed Dagster set is the matched one pyproject.toml pins (core 1.13.N, libraries 0.29.N).

A newer core alone makes pip fall back to 2021 integration releases that fail to import
while ``pip check`` stays silent; this catches such an environment before anything else.
"""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import version

from tests.paths import ROOT

CORE = ("dagster", "dagster-webserver", "dagster-graphql", "dagster-pipes")
LIBRARIES = ("dagster-docker", "dagster-postgres")


def _pins() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = {}
    for requirement in project["dependencies"]:
        match = re.fullmatch(r"(dagster[a-z-]*)==([0-9.]+)", requirement)
        if match:
            pins[match.group(1)] = match.group(2)
    return pins


def test_the_installed_dagster_set_matches_the_pins() -> None:
    pins = _pins()
    assert set(pins) == {"dagster", "dagster-webserver", "dagster-docker", "dagster-postgres"}
    assert {name: version(name) for name in pins} == pins


def test_core_and_libraries_move_together() -> None:
    core = {version(name) for name in CORE}
    libraries = {version(name) for name in LIBRARIES}
    assert len(core) == 1 and len(libraries) == 1, (core, libraries)
    (core_version,), (library_version,) = core, libraries
    major, minor, patch = core_version.split(".")
    assert (major, minor) == ("1", "13")
    assert library_version == f"0.29.{patch}"
