"""Production traces that failed: ``traces.error`` is true when at least one of the trace's spans has the
OpenTelemetry status code ERROR (2), so the listing filters on it; an index on the arrival of error traces only
(partial: a trace without an error span never touches it). Stored traces are backfilled from their spans' bodies.

Revision ID: 0003
"""

import json
import re

import sqlalchemy as sa
from alembic import op

from referee.store._codec import _unpack

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

BATCH = 2000
"""Spans read (and their bodies decoded) per statement of the backfill: the memory it holds is bounded by this."""
_STATUS_ERROR = 2
# A body that may say ERROR (the writers' JSON, compact or with spaces); only those are parsed, and the parse decides.
_MAYBE_ERROR = re.compile(rb'"status":\s*\[\s*2\b')

# This revision's view of the tables it reads and writes (never the package's current schema, which moves on).
_traces = sa.table("traces", sa.column("id", sa.String), sa.column("error", sa.Boolean))
_spans = sa.table("spans", sa.column("trace_id", sa.String), sa.column("span_id", sa.String),
                  sa.column("attrs", sa.LargeBinary))
_texts = sa.table("texts", sa.column("hash", sa.LargeBinary), sa.column("packed", sa.SmallInteger),
                  sa.column("data", sa.LargeBinary))


def upgrade() -> None:
    op.add_column("traces", sa.Column("error", sa.Boolean(), nullable=False, server_default=sa.false()))
    where = sa.column("error") == sa.true()
    op.create_index("ix_traces_error_last", "traces", ["last_ns"], sqlite_where=where, postgresql_where=where)
    _backfill(op.get_bind())


def _is_error(packed: int, data: bytes) -> bool:
    """Whether a stored span body (``{"attributes", "status": [code, message], "service"}``) has status ERROR,
    decoded as the store reads it (``TraceStore.trace_spans``)."""
    raw = _unpack(packed, data)
    if not _MAYBE_ERROR.search(raw):
        return False
    try:
        body = json.loads(raw)
    except ValueError:
        return False
    status = body.get("status") if isinstance(body, dict) else None
    return isinstance(status, list) and bool(status) and status[0] == _STATUS_ERROR


def _backfill(conn: sa.Connection) -> None:
    """Every stored trace with an error span set to ``error``, reading the spans in key order BATCH at a time."""
    after: tuple[str, str] | None = None
    while True:
        q = (sa.select(_spans.c.trace_id, _spans.c.span_id, _texts.c.packed, _texts.c.data)
             .select_from(_spans.join(_texts, _texts.c.hash == _spans.c.attrs))
             .order_by(_spans.c.trace_id, _spans.c.span_id).limit(BATCH))
        if after is not None:
            q = q.where(sa.tuple_(_spans.c.trace_id, _spans.c.span_id) > sa.tuple_(*after))
        rows = conn.execute(q).all()
        if not rows:
            return
        failed = sorted({tid for tid, _sid, packed, data in rows if _is_error(packed, data)})
        if failed:
            conn.execute(sa.update(_traces).where(_traces.c.id.in_(failed)).values(error=True))
        last = rows[-1]
        after = (last[0], last[1])
        if len(rows) < BATCH:
            return


def downgrade() -> None:
    op.drop_index("ix_traces_error_last", "traces")
    op.drop_column("traces", "error")
