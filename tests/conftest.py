"""Shared pytest setup: real-service fixtures live in tests/services/, one module each.

No test may skip: a skipped test is a check that did not run while the run looked green.
The session prints how many were skipped and fails when that is not zero.
"""

from __future__ import annotations

import pytest

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
