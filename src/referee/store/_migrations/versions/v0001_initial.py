"""The first schema: runs, their rows, tags and texts stored once by hash; the planned tables of traces and spans
and their scores, judge alignments and reviewers' labels, generated cases (created empty).

Revision ID: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('texts',
    sa.Column('hash', sa.LargeBinary(length=32), nullable=False),
    sa.Column('packed', sa.SmallInteger(), nullable=False),
    sa.Column('data', sa.LargeBinary(), nullable=False),
    sa.PrimaryKeyConstraint('hash')
    )
    op.create_table('alignments',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('created_at', sa.String(length=32), nullable=False),
    sa.Column('judge_key', sa.String(length=64), nullable=True),
    sa.Column('config', sa.LargeBinary(length=32), nullable=True),
    sa.Column('metrics', sa.LargeBinary(length=32), nullable=True),
    sa.ForeignKeyConstraint(['config'], ['texts.hash'], ),
    sa.ForeignKeyConstraint(['metrics'], ['texts.hash'], ),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('generated_cases',
    sa.Column('batch_id', sa.String(length=32), nullable=False),
    sa.Column('case_id', sa.Text(), nullable=False),
    sa.Column('created_at', sa.String(length=32), nullable=False),
    sa.Column('source', sa.LargeBinary(length=32), nullable=True),
    sa.Column('body', sa.LargeBinary(length=32), nullable=False),
    sa.Column('gate', sa.String(length=16), nullable=False),
    sa.ForeignKeyConstraint(['body'], ['texts.hash'], ),
    sa.ForeignKeyConstraint(['source'], ['texts.hash'], ),
    sa.PrimaryKeyConstraint('batch_id', 'case_id')
    )
    op.create_table('runs',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('kind', sa.String(length=40), nullable=False),
    sa.Column('suite', sa.Text(), nullable=True),
    sa.Column('identity', sa.String(length=64), nullable=False),
    sa.Column('judge_key', sa.String(length=64), nullable=True),
    sa.Column('judge', sa.Text(), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('started_at', sa.String(length=32), nullable=False),
    sa.Column('finished_at', sa.String(length=32), nullable=True),
    sa.Column('git_commit', sa.String(length=64), nullable=True),
    sa.Column('git_branch', sa.Text(), nullable=True),
    sa.Column('git_dirty', sa.Boolean(), nullable=True),
    sa.Column('git_remote', sa.Text(), nullable=True),
    sa.Column('ci_provider', sa.String(length=32), nullable=True),
    sa.Column('ci_commit', sa.String(length=64), nullable=True),
    sa.Column('ci_ref', sa.Text(), nullable=True),
    sa.Column('ci_run_id', sa.Text(), nullable=True),
    sa.Column('results_path', sa.Text(), nullable=True),
    sa.Column('manifest', sa.LargeBinary(length=32), nullable=True),
    sa.Column('n_rows', sa.Integer(), nullable=False),
    sa.Column('n_scored', sa.Integer(), nullable=False),
    sa.Column('n_unscored', sa.Integer(), nullable=False),
    sa.Column('n_error', sa.Integer(), nullable=False),
    sa.Column('cost_usd', sa.Float(), nullable=True),
    sa.Column('input_tokens', sa.Integer(), nullable=True),
    sa.Column('output_tokens', sa.Integer(), nullable=True),
    sa.Column('wall_s', sa.Float(), nullable=True),
    sa.Column('pass_rate', sa.Float(), nullable=True),
    sa.Column('pass_rate_lo', sa.Float(), nullable=True),
    sa.Column('pass_rate_hi', sa.Float(), nullable=True),
    sa.Column('mean', sa.Float(), nullable=True),
    sa.Column('mean_lo', sa.Float(), nullable=True),
    sa.Column('mean_hi', sa.Float(), nullable=True),
    sa.Column('summary', sa.LargeBinary(length=32), nullable=True),
    sa.ForeignKeyConstraint(['manifest'], ['texts.hash'], ),
    sa.ForeignKeyConstraint(['summary'], ['texts.hash'], ),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('runs_commit', 'runs', ['git_commit'], unique=False)
    op.create_index('runs_identity_started', 'runs', ['identity', 'started_at'], unique=False)
    op.create_index('runs_started', 'runs', ['started_at'], unique=False)
    op.create_table('labels',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('run_id', sa.String(length=32), nullable=True),
    sa.Column('case_id', sa.Text(), nullable=False),
    sa.Column('reviewer', sa.Text(), nullable=False),
    sa.Column('label', sa.Text(), nullable=True),
    sa.Column('score', sa.Float(), nullable=True),
    sa.Column('note', sa.LargeBinary(length=32), nullable=True),
    sa.Column('created_at', sa.String(length=32), nullable=False),
    sa.Column('alignment_id', sa.String(length=32), nullable=True),
    sa.ForeignKeyConstraint(['alignment_id'], ['alignments.id'], ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['note'], ['texts.hash'], ),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('labels_case', 'labels', ['case_id'], unique=False)
    op.create_table('rows',
    sa.Column('run_id', sa.String(length=32), nullable=False),
    sa.Column('case_id', sa.Text(), nullable=False),
    sa.Column('rep', sa.Integer(), nullable=False),
    sa.Column('turn', sa.Integer(), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=8), nullable=False),
    sa.Column('score', sa.Float(), nullable=True),
    sa.Column('passed', sa.Boolean(), nullable=True),
    sa.Column('latency_ms', sa.Float(), nullable=True),
    sa.Column('cost_usd', sa.Float(), nullable=True),
    sa.Column('body', sa.LargeBinary(length=32), nullable=False),
    sa.ForeignKeyConstraint(['body'], ['texts.hash'], ),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('run_id', 'case_id', 'rep', 'turn'),
    sqlite_with_rowid=False
    )
    op.create_table('run_tags',
    sa.Column('run_id', sa.String(length=32), nullable=False),
    sa.Column('tag', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('run_id', 'tag'),
    sqlite_with_rowid=False
    )
    op.create_index('run_tags_tag', 'run_tags', ['tag'], unique=False)
    op.create_table('traces',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('service', sa.Text(), nullable=True),
    sa.Column('started_at', sa.String(length=32), nullable=True),
    sa.Column('ended_at', sa.String(length=32), nullable=True),
    sa.Column('run_id', sa.String(length=32), nullable=True),
    sa.Column('attrs', sa.LargeBinary(length=32), nullable=True),
    sa.ForeignKeyConstraint(['attrs'], ['texts.hash'], ),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('spans',
    sa.Column('trace_id', sa.String(length=32), nullable=False),
    sa.Column('span_id', sa.String(length=16), nullable=False),
    sa.Column('parent_id', sa.String(length=16), nullable=True),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=True),
    sa.Column('start_ns', sa.BigInteger(), nullable=True),
    sa.Column('end_ns', sa.BigInteger(), nullable=True),
    sa.Column('attrs', sa.LargeBinary(length=32), nullable=True),
    sa.ForeignKeyConstraint(['attrs'], ['texts.hash'], ),
    sa.ForeignKeyConstraint(['trace_id'], ['traces.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('trace_id', 'span_id')
    )
    op.create_table('trace_scores',
    sa.Column('trace_id', sa.String(length=32), nullable=False),
    sa.Column('span_id', sa.String(length=16), nullable=False),
    sa.Column('evaluator', sa.Text(), nullable=False),
    sa.Column('run_id', sa.String(length=32), nullable=True),
    sa.Column('status', sa.String(length=8), nullable=False),
    sa.Column('score', sa.Float(), nullable=True),
    sa.Column('passed', sa.Boolean(), nullable=True),
    sa.Column('body', sa.LargeBinary(length=32), nullable=True),
    sa.ForeignKeyConstraint(['body'], ['texts.hash'], ),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['trace_id'], ['traces.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('trace_id', 'span_id', 'evaluator')
    )


def downgrade() -> None:
    for name in ("generated_cases", "labels", "alignments", "trace_scores", "spans", "traces", "rows",
                 "run_tags", "runs", "texts"):
        op.drop_table(name)
