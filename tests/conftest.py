"""Shared pytest setup: real-service fixtures live in tests/services/, one module each.

No test may skip: a skipped test is a check that did not run while the run looked green.
The session prints how many were skipped and fails when that is not zero.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterator

import pytest

from inferx_pipeline.plan.cache import CACHE_ENV

pytest_plugins: list[str] = [
    "tests.services.docker_engine",
    "tests.services.postgres",
    "tests.services.chromium",
    "tests.services.lm_eval",
    "tests.services.registry",
    "tests.services.vllm",
    "tests.services.sglang",
    "tests.services.slurm",
]


@pytest.fixture(autouse=True, scope="session")
def _matrix_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """``inferx matrix``'s cache (plan/cache.py) in the session's temp folder, not ~/.cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_ENV, str(tmp_path_factory.mktemp("matrix-cache")))
        yield


def _skipped(config: pytest.Config) -> int:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    return len(reporter.stats.get("skipped", [])) if reporter is not None else 0


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Fail a run that skipped any test (the exit status a green run would hide)."""
    if _skipped(session.config) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the count of skipped tests on every run (it must be 0)."""
    terminalreporter.write_line(f"skipped tests: {_skipped(terminalreporter.config)}")


# The marker of each private service, by the fixture that starts it: a test that uses the
# fixture (directly or through another) carries the marker, so `-m` selects by service.
SERVICE_MARKERS = {
    "docker_engine": "docker",
    "postgres_server": "postgres",
    "chromium_browser": "chromium",
    "registry": "registry",
    "cpu_host": "vllm",
    "sglang_python": "sglang",
    "slurm_session": "slurm",
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with the services its fixtures start (before ``-m`` deselects); in a
    module marked ``shared_state``, every test with the services of all of them."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        for fixture, marker in SERVICE_MARKERS.items():
            if fixture in names and item.get_closest_marker(marker) is None:
                item.add_marker(marker)
    modules: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        if item.get_closest_marker("shared_state") is not None:
            modules[item.nodeid.split("::")[0]].append(item)
    for together in modules.values():
        services = {
            m for i in together for m in SERVICE_MARKERS.values() if i.get_closest_marker(m)
        }
        for item, marker in itertools.product(together, sorted(services)):
            if item.get_closest_marker(marker) is None:
                item.add_marker(marker)
