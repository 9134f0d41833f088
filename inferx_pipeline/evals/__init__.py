"""Accuracy evals: lm-evaluation-harness against an eval job's own served endpoint.

- ``catalog``: ``catalog/evals.yaml`` (protocol, tasks, per-family task and threshold).
- ``verification``: the eval server's final argv/env carries no synthetic acceptance.
- ``invocation``: the ``lm-eval run --config`` document and command for one job.
- ``harness``: runs it (the harness lives in its own venv, ``scripts/lm-eval-env``).
- ``scores``: exact match per filter, standard error, sample counts, artifacts.

``data/`` holds the project's own GSM8K-format task (problems and answers written here).
"""
