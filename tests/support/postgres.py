"""A real PostgreSQL server for the store's tests: Debian's ``postgresql``, one temporary cluster per test session
on a free loopback port, a database per test.

PostgreSQL refuses to run as root and CI runs as root: then the cluster runs as an unprivileged user (``nobody``,
or ``REFEREE_TEST_PG_USER``), in folders made for that user under a fresh folder of ``/tmp`` (pytest's own temp
root is root-only). Where no server can be had the tests skip with the reason; ``REFEREE_REQUIRE_POSTGRES=1``
(set by ``.ci/run``) turns that skip into a failure, so a fresh clone proves them.
"""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from referee.store import Store, open_store

REQUIRE_ENV = "REFEREE_REQUIRE_POSTGRES"
USER_ENV = "REFEREE_TEST_PG_USER"
START_TIMEOUT_S = 60.0


def unavailable(reason: str) -> None:
    """Skip, or fail when the environment requires PostgreSQL."""
    if os.environ.get(REQUIRE_ENV, "") not in ("", "0"):
        pytest.fail(f"PostgreSQL is required ({REQUIRE_ENV}=1) but {reason}", pytrace=False)
    pytest.skip(f"no PostgreSQL server for the store's tests: {reason} (install Debian's postgresql; "
                f"{REQUIRE_ENV}=1 makes this a failure)")


def bindir() -> Path | None:
    for cand in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name),
                       reverse=True):
        if (Path(cand) / "initdb").exists() and (Path(cand) / "postgres").exists():
            return Path(cand)
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PostgresServer:
    root: Path
    port: int
    password: str
    proc: subprocess.Popen[Any]
    as_user: dict[str, Any]

    def url(self, db: str = "postgres", *, password: str | None = None) -> str:
        pw = self.password if password is None else password
        return f"postgresql://referee:{pw}@127.0.0.1:{self.port}/{db}"

    def admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql)  # test-owned identifiers only

    def new_database(self) -> str:
        name = "t_" + secrets.token_hex(6)
        self.admin(f"CREATE DATABASE {name}")
        return name

    def drop_database(self, name: str) -> None:
        self.admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)  # fast shutdown
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        shutil.rmtree(self.root, ignore_errors=True)

    def restart(self) -> None:
        """Stop and start the same cluster on the same port (a server restarting mid-run)."""
        os.killpg(self.proc.pid, signal.SIGINT)
        self.proc.wait(30)
        self.proc = _launch(self.root, self.port, self.as_user)
        _wait_ready(self)


def _launch(root: Path, port: int, as_user: dict[str, Any]) -> subprocess.Popen[Any]:
    bd = bindir()
    assert bd is not None
    log = open(root / "server.log", "ab")  # noqa: SIM115 - handed to the child, closed below
    try:
        return subprocess.Popen(
            [str(bd / "postgres"), "-D", str(root / "data"), "-p", str(port), "-k", str(root / "sock"),
             "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
             "-c", "full_page_writes=off", "-c", "max_connections=200"],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True, **as_user)
    finally:
        log.close()


def _wait_ready(srv: PostgresServer) -> None:
    import psycopg

    deadline = time.monotonic() + START_TIMEOUT_S
    last: Exception | None = None
    while time.monotonic() < deadline:
        if srv.proc.poll() is not None:
            raise RuntimeError("postgres exited: " + (srv.root / "server.log").read_text(errors="replace")[-2000:])
        try:
            with psycopg.connect(srv.url(), connect_timeout=2):
                return
        except psycopg.OperationalError as exc:
            last = exc
            time.sleep(0.1)  # polling a condition (the server accepting connections), not a fixed wait
    raise RuntimeError(f"postgres did not accept connections within {START_TIMEOUT_S:.0f}s: {last}")


def start_server() -> PostgresServer:
    """Initialise and start a cluster (raises RuntimeError naming what is missing)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise RuntimeError("the psycopg driver is not installed (pip install 'referee[postgres]')") from None
    bd = bindir()
    if bd is None:
        raise RuntimeError("Debian's postgresql is not installed (no initdb)")
    root = Path(tempfile.mkdtemp(prefix="referee-pg-", dir="/tmp"))
    as_user: dict[str, Any] = {}
    if os.geteuid() == 0:
        import pwd

        name = os.environ.get(USER_ENV, "nobody")
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            shutil.rmtree(root, ignore_errors=True)
            raise RuntimeError(f"running as root and there is no user {name!r} to run postgres as") from None
        as_user = {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}
        os.chmod(root, 0o755)
    (root / "sock").mkdir()
    password = secrets.token_hex(12)
    (root / "pw").write_text(password + "\n")
    if as_user:
        for p in (root, root / "sock", root / "pw"):
            os.chown(p, as_user["user"], as_user["group"])
    init = subprocess.run([str(bd / "initdb"), "-D", str(root / "data"), "-U", "referee", "--auth=scram-sha-256",
                           f"--pwfile={root / 'pw'}", "-E", "UTF8", "--no-sync"],
                          capture_output=True, text=True, start_new_session=True, cwd=root, **as_user)
    if init.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"initdb failed: {init.stderr.strip()[-500:]}")
    (root / "pw").unlink()
    last: Exception | None = None
    for _ in range(5):  # a port taken between choosing and binding it: choose another
        port = free_port()
        srv = PostgresServer(root, port, password, _launch(root, port, as_user), as_user)
        try:
            _wait_ready(srv)
            return srv
        except RuntimeError as exc:
            last = exc
            if srv.proc.poll() is None:
                os.killpg(srv.proc.pid, signal.SIGKILL)
                srv.proc.wait(10)
    shutil.rmtree(root, ignore_errors=True)
    raise RuntimeError(f"could not start postgres: {last}")


# Fixtures (registered in tests/conftest.py): every store test runs on SQLite and on this server.
_pg: dict[str, PostgresServer | str] = {}


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    if "error" in _pg:
        unavailable(str(_pg["error"]))
    try:
        srv = start_server()
    except RuntimeError as exc:
        _pg["error"] = str(exc)
        unavailable(str(exc))
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def pg_url(pg_server: PostgresServer) -> Iterator[str]:
    db = pg_server.new_database()
    try:
        yield pg_server.url(db)
    finally:
        pg_server.drop_database(db)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'history.sqlite'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    st = open_store(store_url)
    try:
        yield st
    finally:
        st.close()
