"""Which store a run records into: ``--store URL`` / ``--no-store`` / ``--tag`` (a command's flags),
``REFEREE_STORE=URL|off``, else the SQLite file in referee's folder (``.referee/history.sqlite``).

The flags reach the runner through a context variable (:func:`recording`), so every entry point records through
the one sink in ``runner/_session`` without passing the store along."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from .._util._home import referee_dir
from .._util._redact import redact_text
from ..errors import RefereeError, UserError

ENV = "REFEREE_STORE"
FILE_NAME = "history.sqlite"
_OFF = frozenset({"off", "0", "false", "no", "none"})
MAX_TAG = 200


class StoreError(UserError):
    """The store cannot be used (its message names the store, never its password)."""


class AmbiguousRun(KeyError, RefereeError):
    """A run id prefix that more than one stored run begins with (a ``KeyError``, as a missing run is)."""


@dataclass(frozen=True)
class StoreSettings:
    """``url`` None: the default SQLite file; ``enabled`` False: nothing is recorded."""

    url: str | None = None
    enabled: bool = True
    tags: tuple[str, ...] = ()
    readable: bool = True
    """Whether baselines may be looked up in it: ``--no-store`` records nothing but still reads the history;
    ``REFEREE_STORE=off`` turns it off altogether."""

    def resolved_url(self) -> str:
        return self.url if self.url else default_url()


_CURRENT: ContextVar[StoreSettings | None] = ContextVar("referee_store", default=None)


def default_url() -> str:
    """The default store: ``history.sqlite`` in referee's folder (``.referee/`` at the repository's top level)."""
    return sqlite_url(referee_dir() / FILE_NAME)


def sqlite_url(path: str | Path) -> str:
    # A URL's path is percent-decoded and ends at "?": a file named "100%?.sqlite" is escaped to round-trip.
    return "sqlite:///" + str(Path(path).resolve()).replace("%", "%25").replace("?", "%3F")


def normalise_url(value: str) -> str:
    """A URL as given (``sqlite:///file``, ``postgresql://...``), or a plain file path made a SQLite URL."""
    value = value.strip()
    if not value:
        raise UserError("--store needs a URL (sqlite:///path or postgresql://user:pass@host:port/db) or a file path")
    if value.lower() in _OFF:
        # REFEREE_STORE's word for "off", given where a store is named, recorded into a file of that name.
        raise UserError(f"--store {value!r} names no store: to record nothing give --no-store (store=False in Python) "
                        f"or REFEREE_STORE=off; a file of that name is ./{value}")
    if "://" not in value:
        return sqlite_url(value)
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises for a port that is no number, or out of range
    except ValueError as exc:  # a malformed host or port: said up front, never a traceback in the middle of a run
        raise UserError(f"--store {display_url(value)}: not a valid URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme.split("+")[0] not in ("sqlite", "postgresql", "postgres"):
        raise UserError(f"--store {display_url(value)}: only sqlite:/// and postgresql:// stores are supported")
    if scheme.split("+")[0] == "postgres":
        value = "postgresql" + value[len("postgres"):]
    if scheme.split("+")[0] == "sqlite" and not parts.path.lstrip("/"):
        # SQLite's empty name is a database in memory: every run "recorded" there is lost when the command ends (an
        # unset variable in sqlite:///$HISTORY does this). One in memory is asked for by name.
        raise UserError(f"--store {display_url(value)} names no file: give sqlite:///path/to/history.sqlite (or "
                        "sqlite:///:memory:, a history lost when the command ends)")
    return value


def reserved_paths(store_url: str | None = None) -> list[Path]:
    """What no command's output may be written over: referee's own folder (``.referee/``: the default run history,
    the response cache), and the SQLite store named by ``store_url`` (a command's ``--store``) or
    ``REFEREE_STORE``, with its journal files. A store that is not a local file names nothing here."""
    paths = [referee_dir()]
    for raw in (store_url, os.environ.get(ENV)):
        if not raw or raw.strip().lower() in _OFF:
            continue
        try:
            path = sqlite_file(normalise_url(raw))
        except UserError:  # the command says what is wrong with it
            continue
        if path is not None:
            paths += [path, *(path.with_name(path.name + end) for end in ("-wal", "-shm", "-journal"))]
    return paths


def deleted_while_running(run_id: str) -> str:
    """What a recording says when its run was deleted from the history (``runs delete``, ``runs prune``) while it
    was still running."""
    return (f"run {run_id[:12]} was deleted from the history while it was recording, so it is not kept there "
            "(nor any of its rows)")


def require_history(url: str) -> None:
    """Raise :class:`StoreError` when ``url`` names a local file that does not exist: a command that only reads
    the history says so rather than making an empty store (and a ``.referee/`` folder) where it was run."""
    path = sqlite_file(url)
    if path is not None and not path.exists():
        raise StoreError(f"no run history at {path}: nothing has been recorded there yet")


def sqlite_path(url: str) -> Path | None:
    """The file a plain ``sqlite:///PATH`` URL names, else None (memory, URI options: left to SQLAlchemy)."""
    return None if "?" in url else sqlite_file(url)


def sqlite_file(url: str) -> Path | None:
    """The file a ``sqlite:///PATH[?OPTIONS]`` URL opens, read as SQLAlchemy reads it (the path ends at "?" and is
    percent-decoded), else None (memory, not SQLite): what is checked for existence is what is opened."""
    prefix = "sqlite:///"
    if not url.startswith(prefix):
        return None
    path = unquote(url[len(prefix):].split("?", 1)[0])
    return Path(path) if path and path != ":memory:" else None


def check_tags(tags: Sequence[str]) -> tuple[str, ...]:
    """Tags as given (any characters: they are bound parameters), refusing empty and oversized ones."""
    out: list[str] = []
    for t in tags:
        if not t.strip():
            raise UserError("--tag needs a non-empty value")
        if len(t) > MAX_TAG:
            raise UserError(f"--tag is {len(t)} characters; at most {MAX_TAG}")
        if t not in out:
            out.append(t)
    return tuple(out)


def current() -> StoreSettings:
    """The settings in force: the innermost :func:`recording`, else ``REFEREE_STORE``, else the default file."""
    s = _CURRENT.get()
    if s is not None:
        return s
    env = os.environ.get(ENV, "").strip()
    if env.lower() in _OFF:
        return StoreSettings(enabled=False, readable=False)
    return StoreSettings(url=normalise_url(env) if env else None)


@contextmanager
def recording(url: str | None = None, *, enabled: bool | None = None,
              tags: Sequence[str] = ()) -> Iterator[StoreSettings]:
    """Within this block runs record into ``url`` (default: as :func:`current`), with ``tags``;
    ``enabled=False`` records nothing (``--no-store``)."""
    base = current()
    settings = StoreSettings(
        url=normalise_url(url) if url else base.url,
        enabled=base.enabled if enabled is None and not url else (True if enabled is None else enabled),
        tags=check_tags([*base.tags, *tags]),
        readable=base.readable or bool(url),
    )
    token = _CURRENT.set(settings)
    try:
        yield settings
    finally:
        _CURRENT.reset(token)


def display_url(url: str) -> str:
    """``url`` without its password (and user), for every message, log and table."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # a malformed host or port: whatever precedes the last "@" may be credentials
        scheme, sep, rest = url.partition("://")
        netloc, slash, path = rest.partition("/")
        if "@" in netloc:
            netloc = "***@" + netloc.rsplit("@", 1)[1]
        return redact_text(scheme + sep + netloc + slash + path)
    if parts.password is None and parts.username is None:
        return redact_text(url)
    host = parts.hostname or ""
    if port:
        host = f"{host}:{port}"
    shown = parts._replace(netloc=f"***@{host}").geturl()
    return redact_text(shown, secrets=[parts.password] if parts.password else [])


def scrub(message: str, url: str) -> str:
    """An error message with the store's password (and the URL's credentials) masked, and without SQLAlchemy's
    "(Background on this error at: URL)" line, which points at its documentation, not at what is wrong."""
    message = "\n".join(line for line in message.splitlines()
                         if not line.startswith("(Background on this error at:")).strip()
    try:
        password = urlsplit(url).password
    except ValueError:  # a malformed host: display_url masks what precedes its "@"
        password = None
    secrets = [password] if password else []
    for s in secrets:
        message = message.replace(s, "***")
    return redact_text(message.replace(url, display_url(url)))


def scope(store: str | bool | None = None, tags: Sequence[str] = ()) -> AbstractContextManager[object]:
    """The Python entry points' ``store=`` / ``tags=``: None keeps the store in force (``REFEREE_STORE``, else
    the default file), False records nothing, True records (into the default), a string is a store URL or file."""
    if store is None and not tags:
        return nullcontext()
    if store is False:
        return recording(enabled=False, tags=tags)
    if store is True or store is None:
        return recording(enabled=True if store is True else None, tags=tags)
    if not isinstance(store, str | os.PathLike):
        raise UserError(f"store= takes a URL, a file path, True or False; got {type(store).__name__}")
    return recording(os.fspath(store), tags=tags)


def _seconds(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        v = float(raw)
    except ValueError:
        raise StoreError(f"{name}={raw!r} is not a number of seconds") from None
    if not (0 < v < 86400):
        raise StoreError(f"{name}={raw!r} must be a number of seconds above 0 and under 86400")
    return v


def lock_timeout_s() -> float:
    """How long a writer waits for another's lock (``REFEREE_STORE_TIMEOUT``, default 30 s)."""
    return _seconds("REFEREE_STORE_TIMEOUT", 30.0)


def connect_timeout_s() -> float:
    return _seconds("REFEREE_STORE_CONNECT_TIMEOUT", 5.0)
