"""Real git repositories for tests: a work tree with commits at fixed dates, no user config."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

IDENTITY = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,  # no signing, hooks or aliases from the machine
    "GIT_CONFIG_NOSYSTEM": "1",
}


def isolate_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """Give git (ours and the package's) a fixed identity and no user or system config."""
    for key, value in IDENTITY.items():
        monkeypatch.setenv(key, value)


class Work:
    """A non-bare repository in ``path`` on branch ``main`` (``git init -b main``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._clock = 1_700_000_000  # each commit one hour after the last: distinct dates
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        """stdout of ``git -C path ARGS``; fails the test with git's stderr."""
        env = {**os.environ, "GIT_AUTHOR_DATE": f"@{self._clock} +0000"}
        env["GIT_COMMITTER_DATE"] = env["GIT_AUTHOR_DATE"]
        done = subprocess.run(
            ["git", "-C", str(self.path), *args], capture_output=True, text=True, env=env
        )
        if done.returncode != 0:
            pytest.fail(f"git {' '.join(args)}: {done.stderr}")
        return done.stdout.strip()

    def commit(self, files: dict[str, str | None], message: str = "change") -> str:
        """Write (or, for None, delete) ``files``, commit them all, return the new SHA."""
        for name, text in files.items():
            target = self.path / name
            if text is None:
                target.unlink()
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
        self._clock += 3600
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD")
