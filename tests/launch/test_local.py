"""The local launcher: how it resolves a spec, the engine's interpreter from its shebang, and
the engine facts of a real vLLM install."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.engines.base import adapter_for
from inferx_pipeline.errors import LaunchError
from inferx_pipeline.launch.local import (
    LocalFacts,
    LocalHost,
    LocalLauncher,
    Program,
    package_version,
    program_interpreter,
)
from inferx_pipeline.launch.models import ModelStore
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.settings import Settings
from tests.engines.jobs import recipe_jobs
from tests.services.vllm import TINY_MODEL, TINY_RECIPE, CpuHost


def _spec() -> ServerSpec:
    job = recipe_jobs(TINY_RECIPE)[0]
    catalog = cached_catalog(Settings().catalog_dir)
    return adapter_for(job).server_spec(job, sku=catalog.sku(job.sku))


def test_resolve_fills_program_model_port_and_offline_env(tmp_path: Path) -> None:
    host = LocalHost(
        source="test",
        programs={"vllm": Program(path=Path("/opt/vllm/bin/vllm"), package="vllm")},
        models=ModelStore(models={TINY_MODEL: tmp_path / "tiny"}),
    )
    spec = LocalLauncher(host, tmp_path).resolve(_spec(), 8123)
    assert spec.argv[:5] == (
        "/opt/vllm/bin/vllm", "serve", str(tmp_path / "tiny"), "--served-model-name", TINY_MODEL,
    )  # fmt: skip
    assert "8123" in spec.argv and spec.port == 8123
    assert spec.env["HF_HUB_OFFLINE"] == "1" and spec.env["VLLM_CPU_KVCACHE_SPACE"] == "1"


def test_unknown_program_and_unstaged_model_are_named(tmp_path: Path) -> None:
    empty = LocalHost(source="test", programs={})
    with pytest.raises(LaunchError, match=r"no program 'vllm' on this host .* programs\.vllm"):
        LocalLauncher(empty, tmp_path).resolve(_spec(), 1)
    unstaged = empty.model_copy(update={"programs": {"vllm": Program(path=Path("/x"))}})
    with pytest.raises(LaunchError, match=r"'inferx/tiny-qwen3' is not in the model store"):
        LocalLauncher(unstaged, tmp_path).resolve(_spec(), 1)
    with pytest.raises(LaunchError, match=r"no tokenizer\.json in the model store"):
        ModelStore(models={TINY_MODEL: tmp_path}).tokenizer(TINY_MODEL)


@pytest.mark.vllm
def test_the_engine_version_and_digest_come_from_the_installed_package(cpu_host: CpuHost) -> None:
    # Serving, death and cleanup of the real engine: tests/e2e/test_real_vllm.py.
    facts = LocalFacts(cpu_host.host)
    assert facts.version("vllm") == "0.32.0+cpu"
    assert facts.digest("ignored") == "local:vllm==0.32.0+cpu"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real venv whose path has a space (pip writes its ``#!/bin/sh`` trampoline then)."""
    root = tmp_path_factory.mktemp("envs") / "engine env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    return root


def _script(path: Path, header: str) -> Path:
    # A console script's body, as pip writes it under its shebang header.
    path.write_text(header + "import sys\nprint(sys.prefix)\n")
    path.chmod(0o755)
    return path


def _runs_in(python: str, venv: Path) -> None:
    done = subprocess.run([python, "-c", "import sys; print(sys.prefix)"], capture_output=True,
                          text=True, check=True)  # fmt: skip
    assert done.stdout.strip() == str(venv)


def _trampoline(python: str) -> str:
    # pip's (distlib's) text for an interpreter path that is too long or has a space.
    return f"#!/bin/sh\n'''exec' {python} \"$0\" \"$@\"\n' '''\n"


def test_the_interpreter_of_a_pip_trampoline_is_the_python_it_execs(venv: Path) -> None:
    python = venv / "bin" / "python"
    script = _script(venv / "bin" / "engine", _trampoline(f'"{python}"'))
    assert program_interpreter(script) == str(python)
    _runs_in(program_interpreter(script), venv)
    done = subprocess.run([script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == str(venv)  # the trampoline text is one that runs


def test_an_unquoted_long_trampoline_path_is_read_too(tmp_path: Path) -> None:
    script = _script(tmp_path / "engine", _trampoline(sys.executable))
    assert program_interpreter(script) == sys.executable


def test_env_shebangs_resolve_the_name_on_path(
    venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    for header in ("#!/usr/bin/env python3\n", "#!/usr/bin/env -S python3 -u\n",
                   "#!/usr/bin/env -u HOME PYTHONHASHSEED=0 python3\n"):  # fmt: skip
        script = _script(tmp_path / "engine", header)
        assert program_interpreter(script) == str(venv / "bin" / "python3"), header
        _runs_in(program_interpreter(script), venv)


def test_a_plain_shebang_and_a_python_binary(tmp_path: Path) -> None:
    # The kernel splits a shebang at its first space: a plain one names a path without.
    script = _script(tmp_path / "engine", f"#!{sys.executable} -E\n")
    assert program_interpreter(script) == sys.executable
    _runs_in(program_interpreter(script), Path(sys.prefix))
    assert program_interpreter(Path(sys.executable)) == sys.executable


def test_an_interpreter_that_cannot_be_told_is_named(tmp_path: Path) -> None:
    missing = _script(tmp_path / "a", "#!/usr/bin/env no-such-python-here\n")
    with pytest.raises(LaunchError, match=r"/a: its shebang runs 'no-such-python-here'"):
        program_interpreter(missing)
    shell = _script(tmp_path / "b", '#!/bin/sh\nexec vllm "$@"\n')
    with pytest.raises(LaunchError, match=r"/b: a shell script that execs no python"):
        program_interpreter(shell)


def test_the_version_probe_runs_through_a_trampoline(tmp_path: Path) -> None:
    script = _script(tmp_path / "engine", _trampoline(sys.executable))
    program = Program(path=script, package="pydantic")
    assert package_version(program) == importlib.metadata.version("pydantic")
