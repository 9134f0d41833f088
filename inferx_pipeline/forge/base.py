"""The seam to a forge: what the pipeline reads and writes of a repository's pull requests.

::

    forge: Forge = GitHubForge.from_url("https://github.com/org/recipes")
    for pull in forge.open_pulls():
        sha = watched.fetch_ref(forge.pull_ref(pull.number), f"refs/inferx/pull/{pull.number}")
        forge.comment(pull.number, "measuring " + sha[:12])

GitHub (``forge/github.py``) is the one implementation; another forge (GitLab, Gitea)
implements these methods. Every failure is a ForgeError.
"""

from __future__ import annotations

from typing import Protocol

from inferx_pipeline.forge.models import Comment, Commit, PullRequest


class Forge(Protocol):
    """Pull requests, commits and PR comments of one repository on its forge."""

    def open_pulls(self) -> list[PullRequest]:
        """Every open pull request (all pages), in the forge's order."""
        ...

    def pull(self, number: int) -> PullRequest:
        """Pull request ``number``, open or not."""
        ...

    def commit(self, sha: str) -> Commit:
        """The commit ``sha`` (its message: where a changelog entry may be named)."""
        ...

    def comments(self, number: int) -> list[Comment]:
        """Every comment on pull request ``number``'s conversation, oldest first."""
        ...

    def comment(self, number: int, body: str) -> Comment:
        """Post ``body`` (Markdown) on pull request ``number``; not idempotent: each call posts."""
        ...

    def update_comment(self, comment_id: int, body: str) -> Comment:
        """Replace the body of comment ``comment_id`` (idempotent)."""
        ...

    def pull_ref(self, number: int) -> str:
        """The git ref pull request ``number``'s head is fetched from, in the repository."""
        ...
