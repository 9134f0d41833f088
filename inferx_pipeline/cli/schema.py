"""``inferx schema``: print (or write) the JSON Schema of the recipe format."""

from __future__ import annotations

import json
from pathlib import Path

import click

from inferx_pipeline.recipes.schema import recipe_json_schema


def schema_text() -> str:
    """The recipe JSON Schema as stable, indented JSON text (ends with a newline)."""
    return json.dumps(recipe_json_schema(), indent=2, sort_keys=True) + "\n"


@click.command()
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the schema to this file (e.g. recipes/recipe.schema.json) instead of stdout.",
)
def schema(out: Path | None) -> None:
    """Print the JSON Schema (draft 2020-12) of recipe files, for editors and CI."""
    text = schema_text()
    if out is None:
        click.echo(text, nl=False)
        return
    out.write_text(text)
    click.echo(f"wrote {out}")
