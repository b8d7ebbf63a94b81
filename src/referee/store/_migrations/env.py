"""Alembic's entry for the store's migrations: run from code (``store/_engine.upgrade``) on the connection it is
handed, never from an ``alembic.ini`` on disk."""

from alembic import context


def _run() -> None:
    connection = context.config.attributes["connection"]
    context.configure(connection=connection, target_metadata=None, transactional_ddl=True)
    with context.begin_transaction():
        context.run_migrations()


try:
    context.config  # noqa: B018 - present only while Alembic runs a migration
except AttributeError:
    pass  # imported by something else (a test walking the package): nothing to run
else:
    _run()
