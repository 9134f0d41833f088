"""Four ``inferx publish`` processes at once, repeated: a complete site and one row per point.

Each round starts from a new, empty database (SQLite file, or a PostgreSQL database),
so the schema migration races too; the site directory is shared across rounds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from inferx_pipeline.leaderboard.build import build_site_from_store
from inferx_pipeline.pipeline import publish
from inferx_pipeline.results.store import ResultStore
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.artifacts import ArtifactStore
from tests.faults.conftest import POINTS
from tests.services.postgres import PostgresServer

PUBLISHERS = 4
ROUNDS = 2
DEADLINE_S = 300.0

NewDatabase = Callable[[], str]


@pytest.fixture
def sqlite_databases(tmp_path: Path) -> NewDatabase:
    return lambda: f"sqlite:///{tmp_path}/db-{uuid.uuid4().hex[:8]}.sqlite"


@pytest.fixture
def postgres_databases(postgres_server: PostgresServer) -> Iterator[NewDatabase]:
    names: list[str] = []

    def create() -> str:
        names.append(f"race_{uuid.uuid4().hex[:10]}")
        admin = postgres_server.admin()  # autocommit: CREATE DATABASE refuses a transaction
        with admin.cursor() as cur:
            cur.execute(f'CREATE DATABASE "{names[-1]}"')
        admin.close()
        return postgres_server.url(names[-1])

    yield create
    admin = postgres_server.admin()
    with admin.cursor() as cur:
        for name in names:
            cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin.close()


def _publish_at_once(store: ArtifactStore, url: str, site: Path, root: Path) -> None:
    argv = [sys.executable, "-m", "inferx_pipeline", "publish", "--artifacts-dir",
            str(store.root), "--db", url, "--out", str(site)]  # fmt: skip
    env = {**os.environ, "INFERX_ROOT": str(root)}
    procs = [
        subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for _ in range(PUBLISHERS)
    ]
    outputs = [proc.communicate(timeout=DEADLINE_S)[0].decode() for proc in procs]
    assert [p.returncode for p in procs] == [0] * PUBLISHERS, outputs


def _assert_complete(site: Path) -> None:
    manifest = json.loads((site / "manifest.json").read_text())
    assert (site / "index.html").is_file()
    missing = [p["path"] for p in manifest["pages"] if not (site / p["path"]).is_file()]
    missing += [d for d in manifest["downloads"] if not (site / d).is_file()]
    assert missing == []
    assert sorted(p.name for p in site.parent.iterdir() if p.name.startswith(site.name)) == [
        site.name,
        f"{site.name}.builds",
        f"{site.name}.lock",
        f"{site.name}.publish.lock",
    ]
    # The current build and the one before it; no half-built one or stray link.
    builds = sorted(p.name for p in (site.parent / f"{site.name}.builds").iterdir())
    assert len(builds) <= 2 and site.readlink().name in builds, builds


@pytest.mark.parametrize("databases", ["sqlite_databases", "postgres_databases"])
def test_concurrent_publishes_leave_a_complete_site_and_equal_rows(
    databases: str,
    request: pytest.FixtureRequest,
    swept: ArtifactStore,
    fault_root: Path,
    tmp_path: Path,
) -> None:
    new_database: NewDatabase = request.getfixturevalue(databases)
    site = tmp_path / "out" / "site"
    for _ in range(ROUNDS):
        url = new_database()
        _publish_at_once(swept, url, site, fault_root)
        _assert_complete(site)
        store = ResultStore(url)
        assert store.count() == POINTS
        store.close()


# Opens index.html in a loop until ``stop`` exists; prints how often it was missing.
_READER = """
import os, sys
site, stop = sys.argv[1], sys.argv[2]
index = os.path.join(site, "index.html")
reads = missed = 0
print("reading", flush=True)
while not os.path.exists(stop):
    try:
        with open(index, "rb") as page:
            page.read(64)
    except FileNotFoundError:
        missed += 1
    reads += 1
print(reads, missed)
"""
REBUILDS = 12


def test_a_reader_never_misses_index_html_while_publishes_swap_the_site(
    swept: ArtifactStore, tmp_path: Path
) -> None:
    site, url = tmp_path / "site", f"sqlite:///{tmp_path}/results.db"
    publish(swept, url, site, Settings().catalog_dir)
    stop = tmp_path / "stop"
    # Its own process: a thread would only run while this one releases the GIL.
    reader = subprocess.Popen([sys.executable, "-c", _READER, str(site), str(stop)],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert reader.stdout is not None and reader.stdout.readline() == "reading\n"
        for _ in range(REBUILDS):
            build_site_from_store(url, site, Settings().catalog_dir)
    finally:
        stop.touch()
        output = reader.communicate(timeout=DEADLINE_S)[0]
    reads, missed = map(int, output.split())
    assert reads > REBUILDS and missed == 0, output
    _assert_complete(site)
