"""A quarantine entry per file and content: the same damaged bytes at two paths (two
torn manifests of different points) are two entries, no longer one.

The unique key moves from ``artifact_sha256`` to (``artifact_sha256``, ``path``). The
table is rebuilt and its rows copied in order, because revision 0001 left that unique
constraint unnamed (SQLite cannot drop it in place); ids are renumbered so the new
table's id sequence continues after them on PostgreSQL too.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

COPIED = "artifact_sha256, path, source, code, reason, size_bytes, rejected_at, job_id"


def _rebuild(unique: tuple[str, ...], name: str | None) -> None:
    op.create_table(
        "quarantine_rebuilt",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("artifact_sha256", sa.String(length=64), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("source", sa.String(), nullable=True),
        sa.Column("code", sa.String(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("size_bytes", sa.Integer(), nullable=False),
        sa.Column("rejected_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("job_id", sa.String(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint(*unique, name=name),
    )
    op.execute(
        f"INSERT INTO quarantine_rebuilt ({COPIED}) SELECT {COPIED} FROM quarantine ORDER BY id"
    )
    op.drop_table("quarantine")
    op.rename_table("quarantine_rebuilt", "quarantine")


def upgrade() -> None:
    _rebuild(("artifact_sha256", "path"), "uq_quarantine_artifact_path")


def downgrade() -> None:
    # Entries that differ only in path collapse back into one: keep the oldest of each.
    op.execute(
        "DELETE FROM quarantine WHERE id NOT IN "
        "(SELECT MIN(id) FROM quarantine GROUP BY artifact_sha256)"
    )
    _rebuild(("artifact_sha256",), None)
