"""Environment variable names: the POSIX check, in recipes (``inferx validate``) and specs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from inferx_pipeline.cli import cli
from inferx_pipeline.envnames import check_env_name
from tests.launch.specs import make_spec
from tests.paths import ROOT

TINY = ROOT / "recipes" / "tiny" / "tiny-qwen3-bf16-cpu-vllm-ngram.yaml"


@pytest.mark.parametrize("name", ["HF_TOKEN", "_x", "a1", "VLLM_USE_V1"])
def test_posix_names_pass(name: str) -> None:
    assert check_env_name(name) == name


@pytest.mark.parametrize("name", ["A;touch /tmp/x", "A B", "1A", "", "A-B", "A=B", "$(id)"])
def test_anything_else_is_refused_naming_it(name: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"variable name {name!r} is not a valid")):
        check_env_name(name)


def test_a_recipe_env_name_with_shell_in_it_fails_validate_at_its_line(tmp_path: Path) -> None:
    recipe = tmp_path / "bad.yaml"
    text = TINY.read_text()
    assert "    VLLM_CPU_KVCACHE_SPACE: '1'\n" in text
    recipe.write_text(text.replace("VLLM_CPU_KVCACHE_SPACE:", '"A;touch /tmp/x":'))
    line = text.splitlines().index("    VLLM_CPU_KVCACHE_SPACE: '1'") + 1
    result = CliRunner().invoke(cli, ["validate", str(recipe)])
    assert result.exit_code == 1, result.output
    errors = [out for out in result.output.splitlines() if out.startswith(str(recipe))]
    assert len(errors) == 1, result.output
    where, _, message = errors[0].partition(": ")
    assert where.startswith(f"{recipe}:{line}:")
    assert message == (
        "engine.env.A;touch /tmp/x: environment variable name 'A;touch /tmp/x' is not a valid "
        "name; expected letters, digits and '_', not starting with a digit (POSIX) [schema]"
    )


def test_a_spec_refuses_a_bad_env_or_secret_name() -> None:
    with pytest.raises(ValidationError, match="name 'A;B' is not a valid"):
        make_spec(("true",), env={"A;B": "1"})
    with pytest.raises(ValidationError, match="name 'HF TOKEN' is not a valid"):
        make_spec(("true",), secret_env=("HF TOKEN",))
