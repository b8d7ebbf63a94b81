"""`referee store upgrade|check`: a damaged or truncated file is named, a foreign one too; check never changes
anything; a shared PostgreSQL store is upgraded only on purpose."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from referee.store import open_store
from tests.support.cli import run_cli


def test_check_a_healthy_store(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    open_store(store_url).close()
    code, _, err = run_cli(["store", "check", "--store", store_url], capsys)
    assert code == 0 and err.strip().endswith(": ok")


def test_check_names_a_damaged_and_a_truncated_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "h.sqlite"
    st = open_store(f"sqlite:///{db}")
    st.close()
    data = db.read_bytes()
    (tmp_path / "trunc.sqlite").write_bytes(data[: len(data) // 3])
    (tmp_path / "junk.sqlite").write_bytes(b"this is not a database at all" * 100)
    for name in ("trunc.sqlite", "junk.sqlite"):
        before = (tmp_path / name).read_bytes()
        code, _, err = run_cli(["store", "check", "--store", str(tmp_path / name)], capsys)
        assert code == 1 and name in err, err
        assert (tmp_path / name).read_bytes() == before
    code, _, err = run_cli(["store", "check", "--store", str(tmp_path / "missing.sqlite")], capsys)
    assert code == 2 and "no such store" in err


def test_check_finds_rows_missing_from_a_complete_run(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    import referee

    res = referee.evaluate([{"output": "a"}, {"output": "b"}], [{"contains": {"value": "a"}}], store=store_url,
                           progress=False)
    with open_store(store_url) as st, st.engine.begin() as conn:
        conn.execute(text("DELETE FROM rows WHERE case_id = :c"), {"c": res.rows[0].id})
    code, _, err = run_cli(["store", "check", "--store", store_url], capsys)
    assert code == 1 and "1 rows stored, its totals say 2" in err


def test_check_reads_every_text_back_and_names_the_damaged_ones(store_url: str, capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # A text that is not what its hash says, one packed in a way referee does not know, and a compression bomb
    # (the read bound lowered to 4 MiB for speed) are each named; the store is left as it was.
    import zlib

    import referee

    monkeypatch.setattr("referee.store._codec._TEXT_FLOOR", 4 << 20)
    res = referee.evaluate([{"output": f"answer {i} " * 40} for i in range(3)], [{"contains": {"value": "1"}}],
                           store=store_url, progress=False)
    code, _, err = run_cli(["store", "check", "--store", store_url], capsys)
    assert code == 0 and err.strip().endswith(": ok"), err  # every text of a healthy run reads back to its hash
    with open_store(store_url) as st, st.engine.begin() as conn:
        bodies = [bytes(h) for (h,) in conn.execute(text("SELECT body FROM rows ORDER BY case_id"))]
        assert len(bodies) == len(res.rows) == 3
        for h, packed, data in ((bodies[0], 0, b'{"id": "forged"}'), (bodies[1], 7, b"{}"),
                                (bodies[2], 1, zlib.compress(b"\0" * (5 << 20), 9))):
            conn.execute(text("UPDATE texts SET packed = :p, data = :d WHERE hash = :h"), {"p": packed, "d": data, "h": h})
        before = sorted((bytes(h), p, bytes(d)) for h, p, d in conn.execute(text("SELECT hash, packed, data FROM texts")))
    code, _, err = run_cli(["store", "check", "--store", store_url], capsys)
    assert code == 1, err
    assert f"text {bodies[0].hex()[:12]}: its content does not match its hash" in err
    assert f"text {bodies[1].hex()[:12]}: a stored text is packed as 7" in err
    assert f"text {bodies[2].hex()[:12]}: a stored text would expand past the bound of 4,194,304 bytes" in err
    with open_store(store_url) as st, st.engine.connect() as conn:
        after = sorted((bytes(h), p, bytes(d)) for h, p, d in conn.execute(text("SELECT hash, packed, data FROM texts")))
    assert after == before


def test_check_with_a_malformed_row_bound_says_so_once(store_url: str, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    open_store(store_url).close()
    monkeypatch.setenv("REFEREE_STORE_MAX_ROW_BYTES", "lots")
    code, _, err = run_cli(["store", "check", "--store", store_url], capsys)
    assert code == 2 and err.count("REFEREE_STORE_MAX_ROW_BYTES='lots' is not a whole number") == 1, err


def test_upgrade_is_a_no_op_at_the_head(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from referee.store import SCHEMA_REVISION

    file = Path(store_url[len("sqlite:///"):]) if store_url.startswith("sqlite:///") else None
    code, _, err = run_cli(["store", "upgrade", "--store", store_url], capsys)
    if file is not None and not file.exists():  # a file that is not there (a mistyped --store) is not made
        assert code == 2 and "no run history at" in err and not file.exists()
        open_store(store_url).close()
    else:  # an empty PostgreSQL database is given the schema
        assert code == 0 and (f"schema none -> {SCHEMA_REVISION}" in err or "nothing to do" in err)
    code, _, err = run_cli(["store", "upgrade", "--store", store_url], capsys)
    assert code == 0 and "nothing to do" in err


def test_with_the_history_off_check_and_upgrade_need_a_store_named(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # They read (and `upgrade` migrated) the default file the user had turned off, where `referee runs` refuses.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REFEREE_STORE", "off")
    for args in (["store", "check"], ["store", "upgrade"]):
        code, _, err = run_cli(args, capsys)
        assert code == 2 and "the run history is off" in err, (args, err)
    assert not (tmp_path / ".referee").exists()
    named = tmp_path / "h.sqlite"
    open_store(f"sqlite:///{named}").close()
    assert run_cli(["store", "check", "--store", str(named)], capsys)[0] == 0


def test_upgrading_a_file_that_is_no_store_says_so_and_leaves_it(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    # It was a SQLAlchemy traceback (exit 1).
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"id": "a", "input": "q"}\n')
    code, _, err = run_cli(["store", "upgrade", "--store", str(cases)], capsys)
    assert code == 2 and "cannot upgrade" in err and "file is not a database" in err and "Traceback" not in err
    assert cases.read_text() == '{"id": "a", "input": "q"}\n'
    typo = tmp_path / "histroy.sqlite"  # a file that is not there: said, not made (it was made and "upgraded")
    code, _, err = run_cli(["store", "upgrade", "--store", str(typo)], capsys)
    assert code == 2 and "no run history at" in err and not typo.exists()


def test_an_older_shared_store_is_upgraded_only_on_purpose(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from referee.store import StoreError, _engine

    # One revision exists so far: pretend an older one ("0000") is known, as the next migration will make it.
    monkeypatch.setattr(_engine, "REVISIONS", ("0000", *_engine.REVISIONS))
    open_store(pg_url).close()
    with open_store(pg_url) as st, st.engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0000'"))
    with pytest.raises(StoreError, match="referee store upgrade"):
        open_store(pg_url)
