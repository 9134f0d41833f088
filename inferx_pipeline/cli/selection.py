"""Job-selection flags shared by ``inferx matrix``, ``sweep``, ``materialize`` (one spelling)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

from inferx_pipeline.matrix.select import Selection

F = TypeVar("F", bound=Callable[..., object])

_KEYS = ("recipes", "skus", "frameworks", "families", "scenarios")


def selection_flags(command: F) -> F:
    """Add the repeatable ``--recipe/--sku/--framework/--family/--scenario`` filters."""
    decorators = [
        click.option("--recipe", "recipes", multiple=True, help="Recipe-id glob (repeatable)."),
        click.option("--sku", "skus", multiple=True, help="SKU id (repeatable)."),
        click.option(
            "--framework", "frameworks", multiple=True, help="Engine framework (repeatable)."
        ),
        click.option("--family", "families", multiple=True, help="Model family (repeatable)."),
        click.option(
            "--scenario",
            "scenarios",
            multiple=True,
            type=click.Choice(["fixed-seq-len", "agentic-coding"]),
            help="Scenario kind (repeatable).",
        ),
    ]
    for decorate in reversed(decorators):
        command = decorate(command)
    return command


def selection_options(command: F) -> F:
    """Add ``PATHS...`` (recipe files or directories) and the ``selection_flags``."""
    paths = click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
    return paths(selection_flags(command))


def pop_selection(flags: dict[str, object]) -> Selection:
    """The ``Selection`` of the shared flags, removed from ``flags`` (the command's kwargs)."""
    return Selection.model_validate({key: flags.pop(key) for key in _KEYS})
