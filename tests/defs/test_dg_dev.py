"""``dg dev`` (dagster-dg-cli) on the project: it serves the asset graph, and stops by PID."""

from __future__ import annotations

import os
import socket
import sys
import time
import urllib.error
from pathlib import Path

from inferx_pipeline.defs.devserver import DgDev
from tests.defs.conftest import BF16, H200
from tests.defs.graphql import graphql
from tests.paths import ROOT
from tests.smoke import smoke_root

READY_DEADLINE_S = 180.0
QUERY = "{ assetNodes { assetKey { path } } }"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _asset_keys(url: str, deadline_s: float) -> set[str]:
    """The asset keys the webserver's GraphQL lists, once the code location has loaded."""
    deadline = time.monotonic() + deadline_s
    answer: object = None
    while time.monotonic() < deadline:
        try:
            answer = graphql(url, QUERY)
        except (urllib.error.URLError, OSError) as err:
            answer = err
        else:
            if nodes := answer["assetNodes"]:
                return {"/".join(node["assetKey"]["path"]) for node in nodes}
        time.sleep(0.5)  # the code location loads after the webserver answers: poll
    raise AssertionError(f"no asset graph at {url}/graphql in {deadline_s:.0f} s: {answer}")


def test_dg_dev_serves_the_asset_graph_and_stops_by_pid(tmp_path: Path) -> None:
    root = smoke_root(tmp_path / "root", (H200, BF16))
    venv = Path(sys.executable).parents[1]
    env = {
        **os.environ,
        "INFERX_ROOT": str(root),
        "INFERX_STATE_DIR": str(tmp_path / "state"),
        "VIRTUAL_ENV": str(venv),
    }
    server = DgDev(
        ROOT, tmp_path / "dagster", port=_free_port(), log=tmp_path / "dg-dev.log", env=env
    )
    with server:
        assert server.process is not None
        pid = server.process.pid
        server.wait_ready(READY_DEADLINE_S)
        keys = _asset_keys(server.url, READY_DEADLINE_S)
    assert {"recipes", "sweep_matrix", "sweep/h200", "sweep/mi325x", "leaderboard"} <= keys
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        pass
    else:
        raise AssertionError(f"processes of dg dev's session {pid} still run")
