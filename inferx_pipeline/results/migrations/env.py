"""Alembic runtime: migrate the connection the caller passed in ``config.attributes``."""

from __future__ import annotations

from alembic import context

from inferx_pipeline.results.tables import Base


def run_migrations() -> None:
    """Run the migrations online on the caller's connection, in its transaction."""
    connection = context.config.attributes.get("connection")
    if connection is None:
        raise RuntimeError("results migrations need a connection: use migrations.upgrade()")
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        # SQLite cannot ALTER most things; batch mode rebuilds the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


run_migrations()
