"""Canary secrets go nowhere: not into files, the site, output, or an engine's environment.

A sweep and a publish run as real processes with a canary password in
``INFERX_DATABASE_URL`` (a real PostgreSQL, which trusts loopback and ignores it) and
canary tokens in the environment. While the engine runs, its ``/proc/<pid>/environ``
holds only host basics and the spec's own variables; afterwards no canary is in the
state directory, the artifacts, the site or anything printed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from inferx_pipeline.launch.ownership import ProcessLedger
from inferx_pipeline.launch.secrets import HOST_BASICS
from tests.faults.sweeps import Sweep
from tests.services.postgres import PostgresServer
from tests.sweep.conftest import SEED
from tests.sweep.test_cli_sweep import FAST_FLAGS

CANARIES = {
    "HF_TOKEN": "hf_CANARYtokenNOTREAL0001",
    "AWS_SECRET_ACCESS_KEY": "CANARYawsSECRETnotreal0002",
    "INFERX_SOME_TOKEN": "CANARYinferxTOKEN0003",
}
DB_PASSWORD = "CANARYdbPASSWORD0004"
SLOW = [f if f != "0.001" else "0.05" for f in FAST_FLAGS]
DEADLINE_S = 300.0


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.decode().split("=", 1) for item in raw.split(b"\0") if b"=" in item)


def _leaks(top: Path, needles: list[str]) -> list[str]:
    return [
        str(path)
        for path in top.rglob("*")
        if path.is_file() and any(n.encode() in path.read_bytes() for n in needles)
    ]


def test_no_canary_reaches_files_site_output_or_the_engine(
    postgres_url: str, postgres_server: PostgresServer, fault_root: Path, tmp_path: Path
) -> None:
    user = f"{postgres_server.user}@"
    url = postgres_url.replace(user, f"{postgres_server.user}:{DB_PASSWORD}@")
    state, artifacts, site = tmp_path / "state", tmp_path / "artifacts", tmp_path / "site"
    env = {**CANARIES, "INFERX_DATABASE_URL": url, "INFERX_ROOT": str(fault_root),
           "INFERX_STATE_DIR": str(state), "COLUMNS": "200"}  # fmt: skip
    ledger = ProcessLedger(state / "owned")
    sweep = Sweep(["--launcher", "sim", "--recipe", SEED, "--artifacts-dir", str(artifacts),
                   *SLOW], env)  # fmt: skip
    try:
        sweep.wait_until(lambda: bool(ledger.entries()), "engine")
        engine_env = _environ(ledger.entries()[0].pgid)
        code, sweep_output = sweep.finish()
    finally:
        sweep.stop()
        ledger.reap()
    assert code == 0, sweep_output
    allowed = {*HOST_BASICS, "PYTHONUNBUFFERED"}  # the sim's spec sets no env of its own
    assert set(engine_env) <= allowed, sorted(set(engine_env) - allowed)
    published = subprocess.run(
        [sys.executable, "-m", "inferx_pipeline", "publish", "--artifacts-dir", str(artifacts),
         "--out", str(site)],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=DEADLINE_S,
    )  # fmt: skip
    assert published.returncode == 0, published.stdout + published.stderr
    needles = [*CANARIES.values(), DB_PASSWORD]
    printed = sweep_output + published.stdout + published.stderr
    assert [n for n in needles if n in printed] == []
    assert [leak for top in (state, artifacts, site) for leak in _leaks(top, needles)] == []


def test_no_canary_in_the_dagster_instance(
    postgres_url: str, postgres_server: PostgresServer, fault_root: Path, tmp_path: Path
) -> None:
    """A Dagster run measuring and publishing keeps the URL's password out of its storage."""
    user = f"{postgres_server.user}@"
    url = postgres_url.replace(user, f"{postgres_server.user}:{DB_PASSWORD}@")
    state = tmp_path / "state"
    env = {**CANARIES, "INFERX_DATABASE_URL": url, "INFERX_ROOT": str(fault_root),
           "INFERX_STATE_DIR": str(state), "COLUMNS": "200"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "inferx_pipeline", "materialize", "--recipe", SEED, *FAST_FLAGS],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=DEADLINE_S,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert (state / "dagster").is_dir()  # the instance the runs were recorded in
    needles = [*CANARIES.values(), DB_PASSWORD]
    assert [n for n in needles if n in done.stdout + done.stderr] == []
    assert _leaks(state, needles) == []
