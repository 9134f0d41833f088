"""The forge of the watched recipe repository: its pull requests, commits and PR comments.

Knows nothing of recipes or Dagster; the pull request rules (``prs``), sensors and the CLI
call it.

- ``base``: ``Forge``, the protocol another forge implements.
- ``github``: ``GitHubForge``, GitHub's REST API v3 (and GitHub Enterprise Server's).
- ``models``: ``PullRequest``, ``Comment``, ``Commit``, built from GitHub's JSON.

The git side (fetching a PR's head, what it changes, a file at a commit) is
``gitrepo.WatchedRepo``.
"""
