"""Launcher base pieces: port filling, log buffer, health polling, launcher configs."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import TypeAdapter

from inferx_pipeline.errors import LaunchError
from inferx_pipeline.launch.base import LogBuffer, fill_port, log_file
from inferx_pipeline.launch.config import LauncherConfig, build_launcher
from inferx_pipeline.launch.fake import FakeLauncher
from inferx_pipeline.launch.secrets import redact, secret_values
from inferx_pipeline.launch.subprocess import SubprocessLauncher
from tests.launch.specs import make_spec


def test_fill_port_replaces_every_placeholder() -> None:
    argv = ("serve", "--port", "{port}", "--url=http://h:{port}/v1")
    assert fill_port(argv, 8123) == ("serve", "--port", "8123", "--url=http://h:8123/v1")


def test_log_buffer_keeps_file_and_bounded_tail(tmp_path: Path) -> None:
    log = LogBuffer(tmp_path / "a" / "s.log", keep=3)
    for i in range(5):
        log.append(f"line {i}\n")
    assert log.tail() == ("line 2", "line 3", "line 4")
    assert log.tail(1) == ("line 4",)
    assert log.tail(0) == ()
    log.close()
    log.append("after close")  # a late reader-thread line must not raise
    assert log.path.read_text().splitlines() == [f"line {i}" for i in range(5)]


def test_log_files_never_collide(tmp_path: Path) -> None:
    spec = make_spec(("x",), name="a/b c")
    first, second = log_file(tmp_path, spec), log_file(tmp_path, spec)
    assert first != second and first.name.startswith("a_b_c-")


def test_secrets_by_name_and_redaction(caplog: pytest.LogCaptureFixture) -> None:
    spec = make_spec(("x",), secret_env=("HF_TOKEN", "ABSENT"))
    assert secret_values(spec, {"HF_TOKEN": "v", "OTHER": "o"}) == {"HF_TOKEN": "v"}
    assert "secret ABSENT is not set" in caplog.text
    assert redact({"HF_TOKEN": "v", "A": "1"}, spec.secret_env) == {
        "HF_TOKEN": "<redacted>",
        "A": "1",
    }


def test_launcher_configs_resolve_by_kind(tmp_path: Path) -> None:
    adapter: TypeAdapter[LauncherConfig] = TypeAdapter(LauncherConfig)
    sub = build_launcher(
        adapter.validate_python({"kind": "subprocess"}), run_id="r", log_dir=tmp_path
    )
    assert isinstance(sub, SubprocessLauncher)
    fake = build_launcher(adapter.validate_python({"kind": "fake"}), run_id="r", log_dir=tmp_path)
    assert isinstance(fake, FakeLauncher)
    with pytest.raises(LaunchError, match="needs a Docker host"):
        build_launcher(adapter.validate_python({"kind": "docker"}), run_id="r", log_dir=tmp_path)
