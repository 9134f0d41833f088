"""Headless Chromium for browser tests: Debian's package driven by Playwright (no download).

Installs ``chromium`` with apt when missing. A missing browser fails the tests
that need it. Never runs ``playwright install``.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services.required import unavailable

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
_ROOT = Path(__file__).resolve().parents[2]


def _install() -> str | None:
    """Install Chromium if missing; the reason it is still unavailable, or None."""
    if CHROMIUM.exists():
        return None
    system_deps = _ROOT / "scripts" / "system-deps"
    command = (
        [str(system_deps)] if system_deps.exists() else ["apt-get", "install", "-y", "chromium"]
    )
    if shutil.which("apt-get") is None:
        return "no apt-get to install chromium"
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if not CHROMIUM.exists():
        return f"{' '.join(command)} exited {result.returncode}: {result.stderr[-500:]}"
    return None


# Module scope, not session: Playwright's sync API keeps an asyncio loop running in this
# thread while it is open, and asyncio.run() elsewhere in the session would then fail.
@pytest.fixture(scope="module")
def chromium_browser() -> Iterator[object]:
    """A Playwright ``Browser`` on headless Debian Chromium, closed after the test module."""
    reason = _install()
    if reason is not None:
        unavailable("headless Chromium", reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield browser
        finally:
            browser.close()
