"""``inferx matrix [PATHS...] [selection] [--format ...]``: the jobs and their server commands.

A repeat run with unchanged inputs prints the text it stored last time
(``inferx_pipeline.plan.cache``; ``--no-cache`` skips it). This module imports only
click and the cache at the top, so such a run never imports pydantic or the recipe
machinery; the build imports them when it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from inferx_pipeline.cli.eval_flags import eval_flags
from inferx_pipeline.cli.selection import pop_selection, selection_options
from inferx_pipeline.plan.cache import cache_dir, command_key, lookup, store

if TYPE_CHECKING:
    from inferx_pipeline.plan.build import LoadedMatrix
    from inferx_pipeline.settings import Settings


def _revisions(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> tuple[str, str] | None:
    if value is None:
        return None
    base, sep, head = value.partition("..")
    if not sep or not base or not head:
        raise click.BadParameter(f"got {value!r}; expected BASE..HEAD, e.g. origin/main..HEAD")
    return base, head


@click.command()
@selection_options
@click.option("--changed", callback=_revisions, help="BASE..HEAD: recipes changed in git.")
@click.option("--repo", type=click.Path(path_type=Path), help="Git checkout for --changed.")
@click.option("--new-vs", type=click.Path(path_type=Path), help="Previous --format json file.")
@click.option("--changelog", type=click.Path(path_type=Path), help="InferenceX changelog.")
@click.option("--changelog-last", default=1, show_default=True, help="Changelog entries.")
@eval_flags
@click.option("--policy/--no-policy", default=True, show_default=True, help="Pre-GPU rules.")
@click.option("--allow-duplicates", is_flag=True, help="Keep identical jobs (InferenceX parity).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "csv", "inferencex"]),
    default="table",
    show_default=True,
)
@click.option(
    "--cache/--no-cache",
    default=True,
    show_default=True,
    help="Print the stored matrix when no input byte changed (INFERX_MATRIX_CACHE_DIR).",
)
def matrix(paths: tuple[Path, ...], fmt: str, cache: bool, **flags: object) -> None:
    """Expand recipes (default: recipes/) into jobs and print them with server commands."""
    # --changed reads git history, which no digest of the inputs covers: never cached.
    directory = cache_dir() if cache and flags["changed"] is None else None
    if directory is None:
        click.echo(_build(paths, fmt, flags)[0])
        return
    key = command_key({"paths": paths, "format": fmt, **flags})
    text = lookup(directory, key)
    if text is None:
        text, inputs = _build(paths, fmt, flags)
        store(directory, key, inputs, text)
    click.echo(text)


def _build(paths: tuple[Path, ...], fmt: str, flags: dict[str, object]) -> tuple[str, list[Path]]:
    """(the printed matrix, every input it read) of a run the cache could not answer."""
    from inferx_pipeline.catalog import cached_catalog
    from inferx_pipeline.plan.build import MatrixRequest, checked_matrix, matrix_inputs
    from inferx_pipeline.plan.render import render
    from inferx_pipeline.recipes.policy.literals import redacted
    from inferx_pipeline.settings import Settings

    selection = pop_selection(flags)
    request = MatrixRequest.model_validate({"paths": paths, "selection": selection, **flags})
    settings = Settings()
    matrix = checked_matrix(request, settings)
    text = render(matrix, fmt, cached_catalog(settings.catalog_dir))  # type: ignore[arg-type]  # click.Choice limits fmt
    return redacted(text, _secrets(matrix, settings)), matrix_inputs(request, settings, matrix)


def _secrets(matrix: LoadedMatrix, settings: Settings) -> set[str]:
    # Secret values never reach the terminal, even with --no-policy (secret-literal off).
    from inferx_pipeline.recipes.policy.data import cached_policy
    from inferx_pipeline.recipes.policy.literals import secret_values

    names = cached_policy(settings.catalog_dir).secrets
    return {
        value
        for loaded in matrix.recipes.parsed
        for value in secret_values(
            loaded.recipe.engine.env,
            loaded.recipe.engine.args,
            loaded.recipe.speculative.options,
            names,
        )
    }
