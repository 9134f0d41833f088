"""The results database: idempotent, transactional writes and set-based reads into pandas.

``ResultStore(url)`` opens SQLite (a file, or ``sqlite://`` in memory) or PostgreSQL
(``postgresql+psycopg2://...``) and runs the Alembic migrations to head on open. Writes go
through each driver's fastest bulk path (``sqlite_bulk``: ``executemany`` on the driver's
cursor; ``postgres_bulk``: ``COPY``), inserting first and classifying rows only when a
batch met a stored key.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import Field
from sqlalchemy import (
    Connection,
    Engine,
    Select,
    Table,
    create_engine,
    delete,
    event,
    func,
    select,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import StaticPool

from inferx_pipeline.errors import StoreError
from inferx_pipeline.locks import file_lock
from inferx_pipeline.results import frames, migrations, postgres_bulk, sqlite_bulk
from inferx_pipeline.results.filters import ResultFilter, where_clauses
from inferx_pipeline.results.reader import read_columns
from inferx_pipeline.results.record import RECORD_COLUMNS, ResultRecord
from inferx_pipeline.results.sqlite_bulk import ChunkResult
from inferx_pipeline.results.tables import QUARANTINE, RESULTS
from inferx_pipeline.sqlite_arrow import ArrowReader
from inferx_pipeline.strict import FrozenModel

# Key of the PostgreSQL advisory lock that serializes schema migrations ("inferx" in ASCII).
MIGRATION_LOCK_KEY = 0x696E66657278
# SQLite URLs of a database in memory, not a file.
_IN_MEMORY = (None, "", ":memory:")
# Rows per INSERT executemany; bounds memory and SQL parameter counts per statement.
BATCH_ROWS = 20_000
# Quarantine entries released per DELETE; SQLite allows 32766 bound parameters.
RELEASE_ROWS = 5000

Row = tuple[Any, ...]  # one result in RECORD_COLUMNS order, native Python values
_SHA = RECORD_COLUMNS.index("artifact_sha256")

_Insert = sqlite.Insert | postgresql.Insert
# Dialects with INSERT ... ON CONFLICT; the two the store supports.
_INSERT_FOR_DIALECT: dict[str, Callable[[Table], _Insert]] = {
    "sqlite": sqlite.insert,
    "postgresql": postgresql.insert,
}


class Rejection(FrozenModel):
    """One input that did not become a row, and why (``code`` is a ``checks.REASONS`` key)."""

    path: str = Field(description="The file (or 'file#index' for one record inside it).")
    artifact_sha256: str = Field(description="sha256 hex of the bytes that were rejected.")
    source: str | None = Field(default=None, description="Importer kind, when one was chosen.")
    code: str = Field(description="Reason code, e.g. truncated-json, wrong-units.")
    reason: str = Field(description="One sentence: what was found and what was expected.")
    size_bytes: int = Field(default=0, ge=0)
    job_id: str | None = Field(default=None, description="The sweep point it belongs to, if known.")


class IngestReport(FrozenModel):
    """What one write did: rows added, rows already present, inputs quarantined."""

    written: int = 0
    skipped_existing: int = Field(default=0, description="Artifacts already stored (idempotent).")
    rejections: tuple[Rejection, ...] = ()

    @property
    def quarantined(self) -> int:
        return len(self.rejections)


class ResultStore:
    """SQLAlchemy-backed store of ``ResultRecord`` rows plus the quarantine table."""

    def __init__(self, url: str, *, batch_rows: int = BATCH_ROWS) -> None:
        """Open ``url`` and migrate it to head; raises ``StoreError`` when it cannot."""
        self.url = make_url(url)
        self.batch_rows = batch_rows
        self.engine = _engine(self.url)
        # Large reads of a SQLite file go through ADBC in a child process (sqlite_arrow).
        database = self.url.database
        sqlite_file = self.url.get_backend_name() == "sqlite" and database not in _IN_MEMORY
        self._arrow = ArrowReader(Path(str(database))) if sqlite_file else None
        try:
            with _migration_lock(self.url), self.engine.begin() as conn:
                if conn.dialect.name == "postgresql":  # held until this transaction ends
                    conn.execute(select(func.pg_advisory_xact_lock(MIGRATION_LOCK_KEY)))
                migrations.upgrade(conn)
        except SQLAlchemyError as err:
            raise StoreError(f"{self._where}: cannot open or migrate: {err}") from err

    @property
    def _where(self) -> str:
        return self.url.render_as_string(hide_password=True)

    def close(self) -> None:
        """Release the connection pool (and the SQLite reader's child process)."""
        self.engine.dispose()
        if self._arrow is not None:
            self._arrow.close()

    def write(
        self, records: Iterable[ResultRecord], rejections: Iterable[Rejection] = ()
    ) -> IngestReport:
        """Store ``records`` and quarantine ``rejections`` in one transaction.

        Idempotent by ``artifact_sha256``: an artifact already stored (or repeated in
        ``records``) is counted in ``skipped_existing``, not written again. A record whose
        ``result_id`` is held by a different artifact is quarantined as ``conflict``.
        All-or-nothing: on any database error nothing of this call is kept and
        ``StoreError`` is raised.
        """
        # model_dump() keys follow the field order, which is RECORD_COLUMNS.
        rows = [sqlite_bulk.record_values(tuple(r.model_dump().values())) for r in records]
        return self._write(rows, rejections)

    def write_frame(self, frame: pd.DataFrame) -> IngestReport:
        """Bulk path: store a DataFrame with exactly the ``RECORD_COLUMNS`` (same rules as write).

        The frame is trusted to satisfy ``ResultRecord`` (it is how benchmarks and
        bulk loads write many rows); nulls may be NaN/NaT/None/pd.NA.
        """
        return self._write(frames.bind_rows(frame))

    def _write(self, rows: Sequence[Row], rejections: Iterable[Rejection] = ()) -> IngestReport:
        rejected = list(rejections)
        written = skipped = 0
        write_chunk = _WRITE_CHUNK[self.engine.dialect.name]
        try:
            with self.engine.begin() as conn:
                quarantined = conn.execute(select(QUARANTINE.c.id).limit(1)).first() is not None
                for chunk in _chunks(rows, self.batch_rows):
                    result = write_chunk(conn, chunk)
                    skipped += result.dupes
                    rejected.extend(_conflict(row, sha) for row, sha in result.conflicts)
                    written += len(result.written)
                    if quarantined and result.written:
                        _release(conn, [row[_SHA] for row in result.written])
                self._quarantine(conn, rejected)
        # The SQLite path runs on the driver's cursor, so its errors arrive unwrapped.
        except (SQLAlchemyError, self.engine.dialect.loaded_dbapi.Error) as err:
            raise StoreError(
                f"{self._where}: writing {len(rows)} results failed after {written} rows "
                f"in the transaction: {err.__class__.__name__}: {_cause(err)}; "
                "nothing of this ingest was kept"
            ) from err
        return IngestReport(written=written, skipped_existing=skipped, rejections=tuple(rejected))

    def read_frame(
        self,
        filters: ResultFilter | None = None,
        columns: Sequence[str] | None = None,
        *,
        categorical: bool = False,
    ) -> pd.DataFrame:
        """Rows matching ``filters`` as a DataFrame (one SQL query, unordered).

        Columns are ``RECORD_COLUMNS`` (or ``columns``, a subset, to read less) with
        the same dtypes on every backend: bool, int64/Int64, float64, str,
        datetime64[us, UTC]; with ``categorical`` strings are ``category`` (far less
        memory and faster grouping for large reads). Read in chunks of
        ``reader.CHUNK_ROWS`` rows; raises ``StoreError`` when the query fails.
        """
        names = list(columns) if columns is not None else list(RECORD_COLUMNS)
        unknown = sorted(set(names) - set(RECORD_COLUMNS))
        if unknown:
            raise StoreError(f"read_frame: unknown columns {unknown}; valid: {RECORD_COLUMNS}")
        stmt = select(*(RESULTS.c[name] for name in names))
        stmt = stmt.where(*where_clauses(filters or ResultFilter()))
        return self.read_select(stmt, names, categorical=categorical)

    def read_select(
        self, stmt: Select[Any], names: Sequence[str], *, categorical: bool = False
    ) -> pd.DataFrame:
        """``stmt``'s rows as ``read_frame`` types them; it selects results columns (or
        ``reader.ROWID``) named ``names``, in order. Raises ``StoreError`` when it fails."""
        try:
            with self.engine.connect() as conn:
                return read_columns(conn, stmt, names, categorical=categorical, arrow=self._arrow)
        # The reader runs on the driver's cursor, so its errors arrive unwrapped; a SQLite
        # file's read through ADBC fails as a StoreError naming the file.
        except (SQLAlchemyError, self.engine.dialect.loaded_dbapi.Error, StoreError) as err:
            raise StoreError(f"{self._where}: read failed: {err}") from err

    def count(self) -> int:
        """Number of stored results."""
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(RESULTS)).scalar_one())

    def artifacts_of(self, key: str) -> dict[str, dict[str, str]]:
        """result_id -> {artifact name: sha256} of rows whose result id starts with ``key``,
        or whose job id or result artifact hash is ``key``; the row's own artifact is
        named ``result.json``."""
        columns = (RESULTS.c.result_id, RESULTS.c.artifact_sha256, RESULTS.c.artifacts)
        match = (
            RESULTS.c.result_id.startswith(key, autoescape=True)
            | (RESULTS.c.job_id == key)
            | (RESULTS.c.artifact_sha256 == key)  # what a leaderboard row links to
        )
        with self.engine.connect() as conn:
            rows = conn.execute(select(*columns).where(match).order_by(RESULTS.c.result_id))
            return {rid: {"result.json": sha, **json.loads(text)} for rid, sha, text in rows}

    def quarantine(self) -> list[Rejection]:
        """Every quarantined input, oldest first."""
        stmt = select(QUARANTINE).order_by(QUARANTINE.c.id)
        with self.engine.connect() as conn:
            rows = conn.execute(stmt).mappings().all()
        fields = Rejection.model_fields
        return [Rejection(**{k: v for k, v in row.items() if k in fields}) for row in rows]

    def _quarantine(self, conn: Connection, rejected: Sequence[Rejection]) -> None:
        if not rejected:
            return
        now = datetime.now(UTC)
        rows = [{**r.model_dump(), "rejected_at": now} for r in rejected]
        conn.execute(
            _INSERT_FOR_DIALECT[conn.dialect.name](QUARANTINE).on_conflict_do_nothing(), rows
        )


def _release(conn: Connection, shas: Sequence[str]) -> None:
    """Drop quarantine entries of artifacts now stored (re-ingested with the flags they lacked)."""
    for part in _chunks(shas, RELEASE_ROWS):
        conn.execute(delete(QUARANTINE).where(QUARANTINE.c.artifact_sha256.in_(part)))


def _conflict(values: Row, other_sha: str) -> Rejection:
    row = dict(zip(RECORD_COLUMNS, values, strict=True))
    return Rejection(
        path=f"result {row['result_id'][:12]}",
        artifact_sha256=row["artifact_sha256"],
        source=row.get("source"),
        code="conflict",
        reason=(
            f"result_id {row['result_id'][:12]} (recipe {row['recipe_id']}, sku {row['sku']}, "
            f"conc {row['conc']}, run {row['run_id']}, attempt {row['attempt']}) is already "
            f"stored from artifact {other_sha[:12]}; give this run its own run id or attempt"
        ),
    )


def _cause(err: Exception) -> str:
    # DBAPI errors carry the driver's message; the wrapper adds the whole SQL statement.
    orig = getattr(err, "orig", None)
    return str(orig if orig is not None else err).splitlines()[0]


def _chunks(rows: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def _migration_lock(url: URL) -> contextlib.AbstractContextManager[None]:
    """Two stores opening one new SQLite file must not both create its tables."""
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return contextlib.nullcontext()  # PostgreSQL: an advisory lock; memory: one process
    return file_lock(Path(f"{url.database}.migrate.lock"))


def _engine(url: URL) -> Engine:
    if url.get_backend_name() == "sqlite":
        return _sqlite_engine(url)
    return create_engine(url, pool_pre_ping=True)


def _sqlite_engine(url: URL) -> Engine:
    if url.database in _IN_MEMORY:
        # One shared connection, or every checkout would see its own empty database.
        engine = create_engine(url, poolclass=StaticPool)
    else:
        Path(url.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url)

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn: Any, _record: Any) -> None:
        # WAL lets the leaderboard read while a sweep writes; NORMAL sync is safe with WAL.
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        # 256 MiB page cache: random-hash index inserts thrash the 2 MiB default.
        cursor.execute("PRAGMA cache_size=-262144")
        cursor.close()

    return engine


# dialect -> how one batch is written and classified in the open transaction
_WRITE_CHUNK: dict[str, Callable[[Connection, Sequence[Row]], ChunkResult]] = {
    "sqlite": sqlite_bulk.write_chunk,
    "postgresql": postgres_bulk.write_chunk,
}
