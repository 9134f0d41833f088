"""FakeLauncher: an in-process endpoint, a wrapped URL, and its scripted failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferx_pipeline.errors import ServerExitedError, ServerStartTimeoutError
from inferx_pipeline.launch.base import http_ok
from inferx_pipeline.launch.fake import FakeLauncher, FakeScript
from tests.launch.specs import make_spec

SPEC = make_spec(("unused",), startup_timeout_s=5.0)


def test_healthy_endpoint_answers_and_records_the_spec(tmp_path: Path) -> None:
    launcher = FakeLauncher(FakeScript(log_lines=("loading",)), log_dir=tmp_path)
    with launcher.start(SPEC) as server:
        server.wait_healthy()
        assert http_ok(server.base_url + "/metrics")
        assert server.logs()[0] == "loading"
    assert launcher.started == [SPEC]
    assert server.stopped
    assert not http_ok(server.base_url + "/health", timeout_s=0.5)


def test_never_healthy_times_out(tmp_path: Path) -> None:
    launcher = FakeLauncher(FakeScript(healthy=False), log_dir=tmp_path)
    with pytest.raises(ServerStartTimeoutError), launcher.start(SPEC) as server:
        server.wait_healthy(timeout_s=0.5)


def test_exits_after_n_requests_with_its_code(tmp_path: Path) -> None:
    launcher = FakeLauncher(FakeScript(exit_after_requests=2, exit_code=137), log_dir=tmp_path)
    with launcher.start(SPEC) as server:
        server.wait_healthy()
        assert http_ok(server.base_url + "/v1/models")
        assert server.exit_status() == 137
        assert not http_ok(server.base_url + "/health")
        with pytest.raises(ServerExitedError, match="status 137") as info:
            server.raise_if_exited()
    assert "fake: exiting after 2 requests" in info.value.log_tail


def test_exits_after_seconds_while_waiting(tmp_path: Path) -> None:
    launcher = FakeLauncher(
        FakeScript(healthy=False, exit_after_s=0.3, exit_code=9), log_dir=tmp_path
    )
    with pytest.raises(ServerExitedError, match="status 9"), launcher.start(SPEC) as server:
        server.wait_healthy()


def test_wraps_a_given_base_url(tmp_path: Path) -> None:
    with FakeLauncher(log_dir=tmp_path).start(SPEC) as real:
        wrapper = FakeLauncher(base_url=real.base_url, log_dir=tmp_path)
        with wrapper.start(SPEC) as server:
            assert server.base_url == real.base_url
            server.wait_healthy()
