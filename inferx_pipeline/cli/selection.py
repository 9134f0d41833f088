"""Job-selection flags shared by ``inferx matrix``, ``sweep``, ``materialize``, ``backfill``
(one spelling), and the comma-separated concurrency list they and ``inferx sim`` take."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, cast

import click

if TYPE_CHECKING:
    from inferx_pipeline.matrix.select import Selection

F = TypeVar("F", bound=Callable[..., object])

_KEYS = ("recipes", "skus", "frameworks", "families", "scenarios")


# click.ParamType is generic from click 8.5 on; subscripting it would break click 8.1-8.4.
class Concurrencies(click.ParamType):  # type: ignore[type-arg]
    """Comma-separated positive concurrencies, ``1,4,16``, as a tuple of ints."""

    name = "N[,N...]"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[int, ...]:
        if isinstance(value, tuple):
            return value
        try:
            levels = tuple(int(part) for part in str(value).split(",") if part.strip())
        except ValueError:
            self.fail(f"expected integers like 1,4,16; got {value!r}", param, ctx)
        if not levels or min(levels) < 1:
            self.fail(
                f"expected concurrencies of at least 1, like 1,4,16; got {value!r}", param, ctx
            )
        return levels


CONCURRENCIES = Concurrencies()


def selection_flags(command: F) -> F:
    """Add the repeatable ``--recipe/--sku/--framework/--family/--scenario/--conc`` filters."""
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
        click.option(
            "--conc",
            "concurrencies",
            multiple=True,
            type=CONCURRENCIES,
            help="Only these concurrencies, e.g. 1,8 (repeatable).",
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
    # Imported here: pydantic models are not needed to parse flags, and a cached
    # ``inferx matrix`` never pops a selection.
    from inferx_pipeline.matrix.select import Selection

    given = cast("tuple[tuple[int, ...], ...]", flags.pop("concurrencies"))
    levels = sorted({conc for group in given for conc in group})
    return Selection.model_validate(
        {"concurrencies": tuple(levels), **{key: flags.pop(key) for key in _KEYS}}
    )
