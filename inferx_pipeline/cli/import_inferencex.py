"""``inferx import-inferencex``: InferenceX's data into ours.

``import-inferencex [masters] MASTER.yaml... --out DIR`` writes master-config entries as
recipes (``masters`` is the default subcommand, so the original spelling still works);
``import-inferencex evals DIR|FILE...`` stores InferenceX eval artifacts as eval scores
(``cli/import_evals``, imported only when it runs: the results store pulls in pandas
and SQLAlchemy, which importing master configs never needs).

Importing the same masters again into an unchanged DIR writes the same bytes, so such a
run only prints the report it stored last time (``inferx_pipeline.plan.cache``, as
``inferx matrix`` does; ``--no-cache`` skips it): this module imports only click and the
cache at the top, and the import's machinery (pydantic, the recipe models) when it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import click

from inferx_pipeline.cli import LazyGroup
from inferx_pipeline.plan.cache import cache_dir, command_key, lookup, store


class _MastersByDefault(LazyGroup):
    """A group whose arguments go to ``masters`` unless they name another subcommand."""

    lazy_commands: ClassVar[dict[str, str]] = {
        "evals": "inferx_pipeline.cli.import_evals:evals_command"
    }

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.list_commands(ctx) and args[0] != "--help":
            args = ["masters", *args]
        return super().parse_args(ctx, args)


@click.group("import-inferencex", cls=_MastersByDefault)
def import_inferencex() -> None:
    """Import InferenceX master configs (the default) or eval artifacts."""


@import_inferencex.command("masters")
@click.argument("masters", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True))
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Output directory.")
@click.option(
    "--cache/--no-cache",
    default=True,
    show_default=True,
    help="Print the stored report and write nothing when neither the masters, the catalog "
    "nor DIR changed since this import last wrote DIR (INFERX_MATRIX_CACHE_DIR).",
)
def masters_command(masters: tuple[Path, ...], out: Path, cache: bool) -> None:
    """Write one recipe per InferenceX config entry; print what our checks would reject."""
    directory = cache_dir() if cache else None
    key = command_key({"command": "import-inferencex masters", "masters": masters, "out": out})
    text = None if directory is None else lookup(directory, key)
    if text is None:
        text, inputs = _import(masters, out)
        if directory is not None:
            # DIR is digested as written: an edited, added or removed file there is a miss.
            store(directory, key, inputs, text)
    click.echo(text)


def _import(masters: tuple[Path, ...], out: Path) -> tuple[str, list[Path]]:
    """(the printed report, every input it read and DIR) of an import the cache could not
    answer."""
    from inferx_pipeline.catalog import cached_catalog
    from inferx_pipeline.matrix.import_defaults import cached_import_defaults
    from inferx_pipeline.matrix.inferencex import import_masters
    from inferx_pipeline.matrix.runners import cached_runners
    from inferx_pipeline.settings import Settings

    settings = Settings()
    catalog = cached_catalog(settings.catalog_dir)
    runners = cached_runners(settings.catalog_dir)
    defaults = cached_import_defaults(settings.catalog_dir)
    report = import_masters(masters, out, runners, catalog, defaults)
    lines = [f"warning: {finding}" for finding in report.findings]
    lines.append(f"imported {len(report.files)} recipes into {out}")
    return "\n".join(lines), [*masters, settings.catalog_dir, out]
