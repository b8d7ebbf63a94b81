"""``referee store upgrade|check``: the run history's schema and health."""

from __future__ import annotations

import click

from ..errors import UserError
from ._common import echo_err

_STORE_OPT = click.option("--store", "store_url", default=None, metavar="URL",
                          help="The store (default: REFEREE_STORE, else .referee/history.sqlite).")


@click.group("store")
def command() -> None:
    """The run history's database: upgrade its schema, check it (docs/store.md)."""


def _named(store_url: str | None) -> None:
    # As `referee runs`: with the history off, the default file is not the store meant (and is never upgraded).
    from ..store import current

    if store_url is None and not current().readable:
        raise UserError("the run history is off (REFEREE_STORE=off): give --store URL to name one")


@command.command("upgrade")
@_STORE_OPT
def upgrade_cmd(store_url: str | None) -> int:
    """Bring the store's schema to this referee's, under a lock (the way to upgrade a shared PostgreSQL store)."""
    from ..store import display_url, upgrade_store

    _named(store_url)
    before, after = upgrade_store(store_url, on_wait=echo_err)
    from ..store import current, normalise_url

    where = display_url(normalise_url(store_url) if store_url else current().resolved_url())
    if before == after:
        echo_err(f"{where}: schema {after}, nothing to do")
    else:
        echo_err(f"{where}: schema {before or 'none'} -> {after}")
    return 0


@command.command("check")
@_STORE_OPT
def check_cmd(store_url: str | None) -> int:
    """Say what is wrong with the store (a damaged file, a schema to upgrade, rows missing); exit 1 if anything.
    Never changes it."""
    from ..store import check_store, current, display_url, normalise_url, sqlite_file

    _named(store_url)
    url = normalise_url(store_url) if store_url else current().resolved_url()
    file = sqlite_file(url)
    if file is not None and not file.exists():
        raise UserError(f"{display_url(url)}: no such store")
    problems = check_store(url)
    for p in problems:
        echo_err(p)
    if not problems:
        echo_err(f"{display_url(url)}: ok")
    return 1 if problems else 0
