"""Texts compressed with Zstandard: ``texts.packed`` 2 is a Zstandard frame that states its size, written from now
on (three times faster than zlib on a row's body, to the same size). The tables do not change and stored texts are
left as they are (``packed`` 1, zlib, still reads). The revision exists so that a referee that knows only 0, 1
and up to 0003 refuses this store instead of reading a frame as raw bytes.

Revision ID: 0004
"""

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Nothing to change: the texts a 0003 store holds are read as they are."""


def downgrade() -> None:
    # Going back would need every Zstandard text rewritten as zlib, which an older referee could then read.
    raise NotImplementedError("a store at 0004 may hold Zstandard texts, which referee before 0004 cannot read")
