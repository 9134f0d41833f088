"""``inferx matrix [PATHS...] [selection] [--format ...]``: the jobs and their server commands."""

from __future__ import annotations

from pathlib import Path

import click

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.cli.eval_flags import eval_flags
from inferx_pipeline.cli.selection import pop_selection, selection_options
from inferx_pipeline.plan.build import LoadedMatrix, MatrixRequest, checked_matrix
from inferx_pipeline.plan.render import render
from inferx_pipeline.recipes.policy.data import cached_policy
from inferx_pipeline.recipes.policy.literals import redacted, secret_values
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
def matrix(paths: tuple[Path, ...], fmt: str, **flags: object) -> None:
    """Expand recipes (default: recipes/) into jobs and print them with server commands."""
    selection = pop_selection(flags)
    request = MatrixRequest.model_validate({"paths": paths, "selection": selection, **flags})
    settings = Settings()
    matrix = checked_matrix(request, settings)
    text = render(matrix, fmt, cached_catalog(settings.catalog_dir))  # type: ignore[arg-type]  # click.Choice limits fmt
    click.echo(redacted(text, _secrets(matrix, settings)))


def _secrets(matrix: LoadedMatrix, settings: Settings) -> set[str]:
    # Secret values never reach the terminal, even with --no-policy (secret-literal off).
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
