"""The ``inferx`` command: a click group whose commands each live in their own module.

Commands are imported only when invoked (so ``inferx validate`` never pays for
importing Dagster); the table below is the one place that lists them. A group of
subcommands can load its own the same way (``LazyGroup.lazy_commands``).
"""

from __future__ import annotations

import importlib
from typing import ClassVar

import click

from inferx_pipeline.errors import InferxError

# command name -> "module:attribute" (a click.Command or click.Group)
COMMANDS: dict[str, str] = {
    "leaderboard": "inferx_pipeline.cli.leaderboard:leaderboard",
    "results": "inferx_pipeline.cli.results:results",
    "validate": "inferx_pipeline.cli.validate:validate",
    "schema": "inferx_pipeline.cli.schema:schema",
    "matrix": "inferx_pipeline.cli.matrix:matrix",
    "import-inferencex": "inferx_pipeline.cli.import_inferencex:import_inferencex",
    "bench": "inferx_pipeline.cli.bench:bench",
    "sim": "inferx_pipeline.cli.sim:sim",
    "sweep": "inferx_pipeline.cli.sweep:sweep",
    "publish": "inferx_pipeline.cli.publish:publish_command",
    "materialize": "inferx_pipeline.cli.materialize:materialize",
    "backfill": "inferx_pipeline.cli.backfill:backfill",
    "images": "inferx_pipeline.cli.images:images",
    "dagster": "inferx_pipeline.cli.dagster:dagster",
    "pr": "inferx_pipeline.cli.pr:pr",
}


class LazyGroup(click.Group):
    """A group that imports each command's module on first use (``lazy_commands``)."""

    lazy_commands: ClassVar[dict[str, str]] = COMMANDS

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.lazy_commands) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = self.lazy_commands.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        module_name, attr = target.split(":")
        command = getattr(importlib.import_module(module_name), attr)
        if not isinstance(command, click.Command):
            raise TypeError(f"{target} is not a click command")
        return command

    def invoke(self, ctx: click.Context) -> object:
        # A user error is never a traceback: recipe errors exit 2, other InferxErrors 1.
        try:
            return super().invoke(ctx)
        except InferxError as err:
            raise InferxCommandError(err) from err


class InferxCommandError(click.ClickException):
    """An InferxError shown as one line ``Error: ...`` with the error's own exit code."""

    def __init__(self, err: InferxError) -> None:
        super().__init__(str(err))
        self.error_exit_code = err.exit_code

    # click reads exit_code per instance; ours varies with the error (recipe errors exit 2).
    @property
    def exit_code(self) -> int:  # type: ignore[override]
        return self.error_exit_code


@click.group(cls=LazyGroup)
@click.version_option(package_name="inferx-pipeline")
def cli() -> None:
    """Continuous LLM-inference benchmarking: recipes -> matrix -> sweeps -> leaderboard."""


def main() -> None:
    """Console entry point."""
    cli()
