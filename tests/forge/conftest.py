"""Fixtures of the forge tests: a GitHub REST stand-in and a git repository served over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gittools import isolate_git
from tests.services.forge_standin import ForgeStandin
from tests.services.git_http import ServedRepo

OWNER, REPO = "octo-org", "recipes"
TOKEN = "ghp_t0k3n-never-print-me"  # the token the stand-in accepts; no message may show it


@pytest.fixture
def github() -> Iterator[ForgeStandin]:
    """The GitHub stand-in for OWNER/REPO, accepting TOKEN (and anonymous reads)."""
    with ForgeStandin(OWNER, REPO, token=TOKEN) as standin:
        yield standin


@pytest.fixture
def served_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ServedRepo]:
    """A git repository on smart HTTP, git's identity and configuration isolated."""
    isolate_git(monkeypatch)
    with ServedRepo(tmp_path / "served") as served:
        yield served
