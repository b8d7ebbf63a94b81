"""Production traces (``referee collect`` / ``referee monitor``): what the receiver and the monitor need beyond the
planned tables of 0001 — each trace's last arrival, state, span count and cut; each score's export mark and time;
the counts of what was not stored or not evaluated, by reason; the drift alerts.

Revision ID: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("traces", sa.Column("last_ns", sa.BigInteger(), nullable=True))
    op.add_column("traces", sa.Column("state", sa.String(length=16), nullable=False, server_default="open"))
    op.add_column("traces", sa.Column("span_count", sa.Integer(), nullable=False, server_default="0"))
    op.add_column("traces", sa.Column("truncated", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.create_index("ix_traces_state_last", "traces", ["state", "last_ns"])
    op.add_column("trace_scores", sa.Column("at_ns", sa.BigInteger(), nullable=True))
    op.add_column("trace_scores", sa.Column("exported", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.create_table("trace_counts",
                    sa.Column("reason", sa.String(length=200), nullable=False),
                    sa.Column("n", sa.BigInteger(), nullable=False),
                    sa.PrimaryKeyConstraint("reason"))
    op.create_table("trace_alerts",
                    sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
                    sa.Column("at_ns", sa.BigInteger(), nullable=False),
                    sa.Column("metric", sa.Text(), nullable=False),
                    sa.Column("body", sa.LargeBinary(length=32), nullable=False),
                    sa.ForeignKeyConstraint(["body"], ["texts.hash"]),
                    sa.PrimaryKeyConstraint("id"))


def downgrade() -> None:
    op.drop_table("trace_alerts")
    op.drop_table("trace_counts")
    op.drop_column("trace_scores", "exported")
    op.drop_column("trace_scores", "at_ns")
    op.drop_index("ix_traces_state_last", "traces")
    op.drop_column("traces", "truncated")
    op.drop_column("traces", "span_count")
    op.drop_column("traces", "state")
    op.drop_column("traces", "last_ns")
