"""SubprocessLauncher: the real simulator on port 0 -> URL from stdout, health, stop, cleanup."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from inferx_pipeline.errors import LaunchError, ServerExitedError, ServerStartTimeoutError
from inferx_pipeline.launch.base import http_ok
from inferx_pipeline.launch.ownership import group_members
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.launch.subprocess import (
    SubprocessHandle,
    SubprocessLauncher,
    exit_code,
    resolve_executable,
)
from tests.launch.specs import sim_spec, standin_spec


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def launcher(tmp_path: Path) -> SubprocessLauncher:
    return SubprocessLauncher(tmp_path / "logs", grace_s=5.0)


def test_sim_on_port_zero_reads_url_waits_healthy_and_stops(launcher: SubprocessLauncher) -> None:
    with launcher.start(sim_spec("--load-time-s", "0.3")) as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        assert not server.base_url.endswith(":0")
        server.wait_healthy()
        assert http_ok(server.base_url + "/health")
        assert http_ok(server.base_url + "/v1/models")
        assert server.exit_status() is None
        pid = server.proc.pid
    assert not _alive(pid)
    assert server.exit_status() == 0  # the simulator exits cleanly on SIGTERM
    assert any(line.startswith("INFERX_SIM_LISTENING http://") for line in server.logs())
    assert "INFERX_SIM_LISTENING" in server.log_path.read_text()


def test_python_dash_m_program_runs_the_sim_with_this_interpreter(
    launcher: SubprocessLauncher,
) -> None:
    spec = sim_spec("--load-time-s", "0", program=("python", "-m", "inferx_pipeline"))
    with launcher.start(spec) as server:
        server.wait_healthy()
        assert server.proc.args[0] == sys.executable  # type: ignore[index]


def test_exception_inside_block_stops_the_sim(launcher: SubprocessLauncher) -> None:
    with pytest.raises(RuntimeError, match="boom"), launcher.start(sim_spec()) as server:
        pid = server.proc.pid
        raise RuntimeError("boom")
    assert not _alive(pid)


def test_keyboard_interrupt_inside_block_stops_the_sim(launcher: SubprocessLauncher) -> None:
    with pytest.raises(KeyboardInterrupt), launcher.start(sim_spec()) as server:
        pid = server.proc.pid
        raise KeyboardInterrupt
    assert not _alive(pid)


def test_sim_still_loading_times_out_and_is_stopped(launcher: SubprocessLauncher) -> None:
    # The start's deadline covers the simulator's imports on a loaded host; the health
    # wait after it is the short one under test.
    spec = sim_spec("--load-time-s", "600", startup_timeout_s=60.0)
    with (
        pytest.raises(ServerStartTimeoutError, match=r"not healthy after 1\.5 s") as info,
        launcher.start(spec) as server,
    ):
        server.wait_healthy(1.5)
    assert server.exit_status() is not None
    assert any("INFERX_SIM_LISTENING" in line for line in info.value.log_tail)


def test_sim_rejecting_its_arguments_raises_exited_from_start(
    launcher: SubprocessLauncher,
) -> None:
    spec = sim_spec("--sku", "no-such-gpu")
    with pytest.raises(ServerExitedError, match=r"exited with status [12]") as info:
        launcher.start(spec)
    assert info.value.status in (1, 2)
    assert any("no-such-gpu" in line for line in info.value.log_tail)


def test_no_listening_line_times_out_inside_start(launcher: SubprocessLauncher) -> None:
    spec = standin_spec(startup_timeout_s=1.0).model_copy(
        update={
            "argv": (sys.executable, "-c", "import time; print('hung', flush=True); time.sleep(60)")
        }
    )
    with pytest.raises(ServerStartTimeoutError, match="no 'INFERX_SIM_LISTENING <url>' line"):
        launcher.start(spec)


def test_exit_during_health_wait_reports_code_and_tail(launcher: SubprocessLauncher) -> None:
    spec = standin_spec("--load-time-s", "600", "--exit-after-s", "0.3", "--exit-code", "7")
    with (
        pytest.raises(ServerExitedError, match="exited with status 7") as info,
        launcher.start(spec) as server,
    ):
        server.wait_healthy()
    assert info.value.status == 7
    assert info.value.log_tail[-1] == "standin: exiting with 7"


def test_exit_before_url_raises_from_start(launcher: SubprocessLauncher) -> None:
    spec = standin_spec().model_copy(
        update={"argv": ("python", "-c", "import sys; print('bad flag'); sys.exit(2)")}
    )
    with pytest.raises(ServerExitedError, match="exited with status 2") as info:
        launcher.start(spec)
    assert info.value.log_tail == ("bad flag",)


def test_sigkill_after_grace_when_sigterm_is_ignored(tmp_path: Path) -> None:
    stubborn = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('INFERX_SIM_LISTENING http://127.0.0.1:9', flush=True); time.sleep(60)"
    )
    spec = standin_spec().model_copy(update={"argv": ("python", "-c", stubborn)})
    with SubprocessLauncher(tmp_path, grace_s=0.5).start(spec) as server:
        assert server.base_url == "http://127.0.0.1:9"
    assert server.exit_status() == 137


def test_spec_env_and_secret_by_name_reach_the_child(tmp_path: Path) -> None:
    launcher = SubprocessLauncher(tmp_path, environ={**os.environ, "MY_TOKEN": "s3cret"})
    spec = standin_spec("--show-env", "MY_TOKEN", "--show-env", "PLAIN", env={"PLAIN": "x"},
                        secret_env=("MY_TOKEN",))  # fmt: skip
    with launcher.start(spec) as server:
        server.wait_healthy()
    assert {"env MY_TOKEN=set", "env PLAIN=set"} <= set(server.logs())
    assert "s3cret" not in server.log_path.read_text()


def test_resolve_executable() -> None:
    assert resolve_executable(("python", "-V"), python="/venv/bin/python") == (
        "/venv/bin/python",
        "-V",
    )
    assert resolve_executable(("/bin/true",)) == ("/bin/true",)
    assert resolve_executable(("inferx", "sim"))[0] == str(Path(sys.executable).parent / "inferx")
    with pytest.raises(LaunchError, match="executable 'no-such-prog' not found"):
        resolve_executable(("no-such-prog",))


def test_exit_code_maps_signals_like_docker() -> None:
    assert exit_code(0) == 0
    assert exit_code(3) == 3
    assert exit_code(-9) == 137
    assert exit_code(-15) == 143


# A leader that starts a child in its own group, prints the child's PID and its URL,
# then exits once ``go`` exists (so the test decides whether it is alive at stop).
_FAMILY = """
import os, signal, subprocess, sys, time
child = subprocess.Popen(
    [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
     "print('ready', flush=True); time.sleep(120)"],
    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
)
child.stdout.readline()  # the child ignores SIGTERM from here on
print("child", child.pid, flush=True)
print("INFERX_SIM_LISTENING http://127.0.0.1:9", flush=True)
deadline = time.monotonic() + 60
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.05)
"""


def _family(tmp_path: Path) -> tuple[SubprocessLauncher, ServerSpec, Path]:
    go = tmp_path / "go"
    spec = standin_spec().model_copy(update={"argv": ("python", "-c", _FAMILY, str(go))})
    return SubprocessLauncher(tmp_path / "logs", grace_s=1.0), spec, go


def _stop_and_check_group_is_gone(server: SubprocessHandle) -> None:
    pgid = server.proc.pid
    try:
        server.stop()
        assert group_members(pgid) == []
    finally:  # a failing run must not leave the stubborn child behind
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)


def test_stop_kills_a_child_that_ignores_sigterm_with_the_leader_alive(tmp_path: Path) -> None:
    launcher, spec, _ = _family(tmp_path)
    server = launcher.start(spec)
    assert len(group_members(server.proc.pid)) == 2
    _stop_and_check_group_is_gone(server)


def test_stop_kills_children_that_outlive_the_leader(tmp_path: Path) -> None:
    launcher, spec, go = _family(tmp_path)
    server = launcher.start(spec)
    go.touch()
    deadline = time.monotonic() + 30
    while server.proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # polling the leader's exit, bounded by the deadline
    assert server.proc.poll() == 0
    assert len(group_members(server.proc.pid)) == 1  # the child lives on
    _stop_and_check_group_is_gone(server)
