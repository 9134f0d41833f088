"""Accuracy evals: lm-evaluation-harness against an eval job's own served endpoint.

- ``invocation``: the ``lm-eval run --config`` document and command for one job.
- ``harness``: runs it (the harness lives in its own venv, ``scripts/lm-eval-env``).
- ``lm_eval_main``: the script that venv's python runs, lm-eval's ``run`` with a task
  index of the task's own folder only (standalone: it imports lm-eval, not this project).
- ``scores``: exact match per filter, standard error, sample counts, artifacts.

``catalog/evals.yaml``'s model (protocol, tasks, per-family task and threshold) is
``matrix.eval_catalog``: the matrix sizes eval jobs with it.

``data/`` holds the project's own GSM8K-format task (problems and answers written here).
"""
