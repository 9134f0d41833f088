"""deploy/requirements.txt: exact pins covering pyproject's runtime dependencies, no dev tools."""

from __future__ import annotations

import re
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.deploy.conftest import DEPLOY
from tests.paths import ROOT

PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][^\s;#]*)$")
DAGSTER_SET = ("dagster", "dagster-webserver", "dagster-docker", "dagster-postgres")


def _pins() -> dict[str, str]:
    pins = {}
    for line in (DEPLOY / "requirements.txt").read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = PIN.match(line)
        assert match, f"requirements.txt: {line!r} is not an exact name==version pin"
        pins[canonicalize_name(match[1])] = match[2]
    return pins


def _project() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {"runtime": project["dependencies"], "dev": project["optional-dependencies"]["dev"]}


def test_every_runtime_dependency_is_pinned_within_pyproject_bounds() -> None:
    pins = _pins()
    for spec in map(Requirement, _project()["runtime"]):
        name = canonicalize_name(spec.name)
        assert name in pins, f"{spec} is not pinned; regenerate with deploy/pin-requirements"
        assert spec.specifier.contains(pins[name], prereleases=True), f"{name}=={pins[name]}"


def test_dagster_set_matches_pyproject_exactly() -> None:
    pins = _pins()
    runtime = {canonicalize_name(r.name): r for r in map(Requirement, _project()["runtime"])}
    for name in DAGSTER_SET:
        (exact,) = runtime[name].specifier
        assert exact.operator == "==" and pins[name] == exact.version, name
    # Core 1.13.N pairs with libraries 0.29.N: the patch numbers move together.
    patches = {pins[name].rsplit(".", 1)[1] for name in DAGSTER_SET}
    assert len(patches) == 1, {name: pins[name] for name in DAGSTER_SET}


def test_dev_tools_stay_out_of_the_image() -> None:
    pins = _pins()
    runtime = {canonicalize_name(Requirement(d).name) for d in _project()["runtime"]}
    dev_only = {canonicalize_name(Requirement(d).name) for d in _project()["dev"]} - runtime
    assert dev_only & set(pins) == set()
    assert "inferx-pipeline" not in pins, "the project goes in as its own wheel"
