"""The `inferx` group: lazy commands, one-line user errors with the error's exit code."""

from __future__ import annotations

import click
from click.testing import CliRunner

from inferx_pipeline.cli import COMMANDS, LazyGroup
from inferx_pipeline.errors import PolicyError, StoreError


def _group_raising(err: Exception) -> click.Group:
    @click.group(cls=LazyGroup)
    def group() -> None:
        """Test group."""

    @group.command()
    def boom() -> None:
        raise err

    return group


def test_every_listed_command_imports() -> None:
    group = LazyGroup()
    ctx = click.Context(group)
    for name in COMMANDS:
        assert isinstance(group.get_command(ctx, name), click.Command), name


def test_recipe_errors_exit_2_other_errors_exit_1() -> None:
    result = CliRunner().invoke(_group_raising(PolicyError("r.yaml:3: tp: got 3")), ["boom"])
    assert result.exit_code == 2
    assert result.output.strip() == "Error: r.yaml:3: tp: got 3"
    result = CliRunner().invoke(_group_raising(StoreError("db is locked")), ["boom"])
    assert result.exit_code == 1
    assert result.output.strip() == "Error: db is locked"
