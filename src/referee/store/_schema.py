"""The run history's tables (SQLAlchemy Core), one definition for SQLite and PostgreSQL.

Every statement is built from these objects with bound parameters; no SQL is ever formatted from a value. The
migrations in ``_migrations/versions`` create exactly these tables; ``docs/store.md`` documents them.

``NONE_INDEX`` (-1) stands for "no repeat" / "no turn" in the rows' key, since a primary key column cannot be NULL.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    SmallInteger,
    String,
    Table,
    Text,
    false,
    true,
)

NONE_INDEX = -1
metadata = MetaData()

texts = Table(
    "texts", metadata,
    # Any text that repeats across runs (a row's body, a manifest's case ids, a summary), stored once: the key is
    # the SHA-256 of its UTF-8 bytes; ``packed``: 0 ``data`` as it is, 1 zlib (written up to 0003), 2 a Zstandard
    # frame (0004 on). See ``_codec``.
    Column("hash", LargeBinary(32), primary_key=True),
    Column("packed", SmallInteger, nullable=False, default=0),
    Column("data", LargeBinary, nullable=False),
)

runs = Table(
    "runs", metadata,
    Column("id", String(32), primary_key=True),
    Column("kind", String(40), nullable=False),
    Column("suite", Text),
    # The suite's repository-relative path or name:, else the cases file's: what a baseline must match.
    Column("identity", String(64), nullable=False),
    # Hash of suite + evaluators' configuration + judge configuration (never targets or prompts).
    Column("judge_key", String(64)),
    Column("judge", Text),
    # provider/model of the judge, for people.
    Column("status", String(16), nullable=False),
    Column("started_at", String(32), nullable=False),
    Column("finished_at", String(32)),
    Column("git_commit", String(64)),
    Column("git_branch", Text),
    Column("git_dirty", Boolean),
    Column("git_remote", Text),
    Column("ci_provider", String(32)),
    Column("ci_commit", String(64)),
    Column("ci_ref", Text),
    Column("ci_run_id", Text),
    Column("results_path", Text),
    Column("manifest", LargeBinary(32), ForeignKey("texts.hash")),
    Column("n_rows", Integer, nullable=False, default=0),
    Column("n_scored", Integer, nullable=False, default=0),
    Column("n_unscored", Integer, nullable=False, default=0),
    Column("n_error", Integer, nullable=False, default=0),
    Column("cost_usd", Float),
    Column("input_tokens", Integer),
    Column("output_tokens", Integer),
    Column("wall_s", Float),
    Column("pass_rate", Float),
    Column("pass_rate_lo", Float),
    Column("pass_rate_hi", Float),
    Column("mean", Float),
    Column("mean_lo", Float),
    Column("mean_hi", Float),
    Column("summary", LargeBinary(32), ForeignKey("texts.hash")),
    # The per-run summary (groups, intervals) as JSON, written when the run ends: trends never re-read rows.
)
Index("runs_identity_started", runs.c.identity, runs.c.started_at)
Index("runs_started", runs.c.started_at)
Index("runs_commit", runs.c.git_commit)

run_tags = Table(
    "run_tags", metadata,
    Column("run_id", String(32), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("tag", Text, nullable=False),
    PrimaryKeyConstraint("run_id", "tag"),
    sqlite_with_rowid=False,
)
Index("run_tags_tag", run_tags.c.tag)

rows = Table(
    "rows", metadata,
    Column("run_id", String(32), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("case_id", Text, nullable=False),
    Column("rep", Integer, nullable=False),
    Column("turn", Integer, nullable=False),
    Column("seq", Integer, nullable=False),
    # Arrival order within the run (rows come back in it).
    Column("status", String(8), nullable=False),
    Column("score", Float),
    Column("passed", Boolean),
    Column("latency_ms", Float),
    Column("cost_usd", Float),
    Column("body", LargeBinary(32), ForeignKey("texts.hash"), nullable=False),
    # The rest of the row as JSON (rationale, criteria, reply...): identical across reruns, so stored once.
    PrimaryKeyConstraint("run_id", "case_id", "rep", "turn"),
    # SQLite: the key is the table (no rowid and no second copy of the key in an index): a row costs its key and
    # numbers, its body being a hash into `texts`.
    sqlite_with_rowid=False,
)

# Planned for the capabilities that come next (production traces, judge alignment, synthetic cases): created
# empty now so that they are added to, not redesigned. Their texts go through ``texts`` like every other.
traces = Table(
    "traces", metadata,
    Column("id", String(32), primary_key=True),
    # The OpenTelemetry trace id (hex).
    Column("service", Text),
    Column("started_at", String(32)),
    Column("ended_at", String(32)),
    Column("run_id", String(32), ForeignKey("runs.id", ondelete="SET NULL")),
    # The run that scored it, if any (a monitor's run).
    Column("attrs", LargeBinary(32), ForeignKey("texts.hash")),
    # 0002 (production traces): the last span's arrival, open / scored / a skip reason, spans kept, cut at the cap.
    Column("last_ns", BigInteger),
    Column("state", String(16), nullable=False, server_default="open"),
    Column("span_count", Integer, nullable=False, server_default="0"),
    Column("truncated", Boolean, nullable=False, server_default=false()),
    # 0003: at least one of its spans has the OpenTelemetry status ERROR (2), set as spans arrive, never unset.
    Column("error", Boolean, nullable=False, server_default=false()),
    Index("ix_traces_state_last", "state", "last_ns"),
)
# 0003: the arrival of error traces only (partial: a trace without an error span never touches it), for the
# listing's "with an error span" filter.
Index("ix_traces_error_last", traces.c.last_ns, sqlite_where=traces.c.error == true(),
      postgresql_where=traces.c.error == true())
spans = Table(
    "spans", metadata,
    Column("trace_id", String(32), ForeignKey("traces.id", ondelete="CASCADE"), nullable=False),
    Column("span_id", String(16), nullable=False),
    Column("parent_id", String(16)),
    Column("name", Text, nullable=False),
    Column("kind", String(16)),
    Column("start_ns", BigInteger),
    Column("end_ns", BigInteger),
    Column("attrs", LargeBinary(32), ForeignKey("texts.hash")),
    PrimaryKeyConstraint("trace_id", "span_id"),
)
trace_scores = Table(
    "trace_scores", metadata,
    Column("trace_id", String(32), ForeignKey("traces.id", ondelete="CASCADE"), nullable=False),
    Column("span_id", String(16), nullable=False, default=""),
    # Empty: the score is the whole trace's.
    Column("evaluator", Text, nullable=False),
    Column("run_id", String(32), ForeignKey("runs.id", ondelete="CASCADE")),
    Column("status", String(8), nullable=False),
    Column("score", Float),
    Column("passed", Boolean),
    Column("body", LargeBinary(32), ForeignKey("texts.hash")),
    # 0002: when it was scored, and whether the evaluation event was accepted by the export collector.
    Column("at_ns", BigInteger),
    Column("exported", Boolean, nullable=False, server_default=false()),
    PrimaryKeyConstraint("trace_id", "span_id", "evaluator"),
)
# 0002: what was not stored or not evaluated, by reason (never dropped silently); drift alerts.
trace_counts = Table(
    "trace_counts", metadata,
    Column("reason", String(200), primary_key=True),
    Column("n", BigInteger, nullable=False),
)
trace_alerts = Table(
    "trace_alerts", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at_ns", BigInteger, nullable=False),
    Column("metric", Text, nullable=False),
    Column("body", LargeBinary(32), ForeignKey("texts.hash"), nullable=False),
)
alignments = Table(
    "alignments", metadata,
    Column("id", String(32), primary_key=True),
    Column("created_at", String(32), nullable=False),
    Column("judge_key", String(64)),
    # The judge configuration it produced (as runs.judge_key).
    Column("config", LargeBinary(32), ForeignKey("texts.hash")),
    Column("metrics", LargeBinary(32), ForeignKey("texts.hash")),
)
labels = Table(
    "labels", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(32), ForeignKey("runs.id", ondelete="SET NULL")),
    Column("case_id", Text, nullable=False),
    Column("reviewer", Text, nullable=False),
    Column("label", Text),
    # A verdict word (pass / fail / ...) or a criterion's score, as the reviewer gave it.
    Column("score", Float),
    Column("note", LargeBinary(32), ForeignKey("texts.hash")),
    Column("created_at", String(32), nullable=False),
    Column("alignment_id", String(32), ForeignKey("alignments.id", ondelete="SET NULL")),
)
Index("labels_case", labels.c.case_id)
generated_cases = Table(
    "generated_cases", metadata,
    Column("batch_id", String(32), nullable=False),
    Column("case_id", Text, nullable=False),
    Column("created_at", String(32), nullable=False),
    Column("source", LargeBinary(32), ForeignKey("texts.hash")),
    # The chunk it was generated from.
    Column("body", LargeBinary(32), ForeignKey("texts.hash"), nullable=False),
    Column("gate", String(16), nullable=False),
    # kept / rejected (and why, in the body).
    PrimaryKeyConstraint("batch_id", "case_id"),
)
