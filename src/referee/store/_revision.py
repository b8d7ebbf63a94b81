"""The schema revisions this referee knows (no SQLAlchemy here: the recorder's SQLite path checks the head)."""

REVISIONS = ("0001", "0002", "0003", "0004")
"""Every revision, oldest first; the last is the head."""
HEAD = REVISIONS[-1]
