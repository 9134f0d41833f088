"""deploy/postgres/init-databases.sh against the private PostgreSQL cluster."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg2
import pytest

from tests.deploy.conftest import DEPLOY
from tests.services.postgres import PG_BIN, PostgresServer

pytestmark = pytest.mark.postgres

INIT_SCRIPT = DEPLOY / "postgres" / "init-databases.sh"


@dataclass(frozen=True)
class ResultsDb:
    """Names the init script is told to create (unique per test, dropped afterwards)."""

    database: str
    user: str
    password: str


@pytest.fixture
def results_db(postgres_server: PostgresServer) -> Iterator[ResultsDb]:
    suffix = uuid.uuid4().hex[:10]
    # A quote and a space in the password: the script must not splice it into SQL.
    names = ResultsDb(f"results_{suffix}", f"Results {suffix}", f"pw '{suffix}\" x")
    yield names
    admin = postgres_server.admin()
    try:
        with admin.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{names.database}" WITH (FORCE)')
            cur.execute(f'DROP ROLE IF EXISTS "{names.user}"')
    finally:
        admin.close()


def _run_init(server: PostgresServer, names: ResultsDb) -> subprocess.CompletedProcess[str]:
    # What the postgres image gives its init scripts: the superuser, its database, our env.
    env = {
        "PATH": f"{PG_BIN}:{os.environ['PATH']}",
        "PGHOST": server.host,
        "PGPORT": str(server.port),
        "POSTGRES_USER": server.user,
        "POSTGRES_DB": "postgres",
        "INFERX_RESULTS_DB": names.database,
        "INFERX_RESULTS_DB_USER": names.user,
        "INFERX_RESULTS_DB_PASSWORD": names.password,
    }
    return subprocess.run(
        ["bash", str(INIT_SCRIPT)], env=env, capture_output=True, text=True, timeout=60
    )


def test_creates_the_results_database_owned_by_an_unprivileged_role(
    postgres_server: PostgresServer, results_db: ResultsDb
) -> None:
    done = _run_init(postgres_server, results_db)
    assert done.returncode == 0, done.stderr
    admin = postgres_server.admin()
    try:
        with admin.cursor() as cur:
            cur.execute(
                "SELECT r.rolsuper, r.rolcanlogin, r.rolpassword IS NOT NULL "
                "FROM pg_database d JOIN pg_authid r ON r.oid = d.datdba WHERE d.datname = %s",
                (results_db.database,),
            )
            assert cur.fetchone() == (False, True, True)
    finally:
        admin.close()
    # The role can build its schema in its own database (PostgreSQL 15 locks `public` down).
    conn = psycopg2.connect(
        host=postgres_server.host, port=postgres_server.port,
        user=results_db.user, dbname=results_db.database,
    )  # fmt: skip
    try:
        with conn, conn.cursor() as cur:
            cur.execute("CREATE TABLE probe (id int)")
            cur.execute("INSERT INTO probe VALUES (1)")
    finally:
        conn.close()


def test_a_second_run_changes_nothing_and_succeeds(
    postgres_server: PostgresServer, results_db: ResultsDb
) -> None:
    assert _run_init(postgres_server, results_db).returncode == 0
    again = _run_init(postgres_server, results_db)
    assert again.returncode == 0, again.stderr


def test_refuses_to_run_without_the_results_password(
    postgres_server: PostgresServer, results_db: ResultsDb
) -> None:
    done = _run_init(postgres_server, ResultsDb(results_db.database, results_db.user, ""))
    assert done.returncode != 0
    assert "INFERX_RESULTS_DB_PASSWORD" in done.stderr
