"""Eval-mode flags shared by ``inferx matrix`` and ``inferx sweep`` (InferenceX's spelling).

``--no-evals`` (default), ``--evals`` (the default eval selection beside throughput),
``--evals-only`` (agentic evals too; eval jobs only) and ``--all-evals`` (every eligible
point; eval jobs only) set one value, ``evals``: the last one given wins.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

F = TypeVar("F", bound=Callable[..., object])


def eval_flags(command: F) -> F:
    """Add the four eval-mode flags, stored as ``evals`` (an ``EvalMode``)."""
    decorators = [
        click.option("--no-evals", "evals", flag_value="none", default=True, help="No evals."),
        click.option(
            "--evals", "evals", flag_value="default", help="Add eval jobs (default selection)."
        ),
        click.option(
            "--evals-only",
            "evals",
            flag_value="evals-only",
            help="Only eval jobs: the default selection plus agentic ones.",
        ),
        click.option(
            "--all-evals",
            "evals",
            flag_value="all",
            help="Only eval jobs, at every eligible point (catalog/eval-policy.yaml).",
        ),
    ]
    for decorate in reversed(decorators):
        command = decorate(command)
    return command
