"""Upgrades from every earlier schema: a store of each revision is committed (tests/data/store); each opens,
upgrades to the head and reads back whole. A store from a newer referee is refused and left alone."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from referee.results import RunManifest
from referee.store import REVISIONS, SCHEMA_REVISION, StoreError, open_store, upgrade_store
from referee.store._engine import current_revision

FIXTURES = Path(__file__).resolve().parent.parent / "data" / "store"


def test_there_is_a_fixture_for_every_revision() -> None:
    have = sorted(p.stem.removeprefix("schema-") for p in FIXTURES.glob("schema-*.sqlite"))
    assert have == sorted(REVISIONS)


@pytest.mark.parametrize("revision", REVISIONS)
def test_each_revision_upgrades_to_the_head_and_reads_back(revision: str, tmp_path: Path) -> None:
    db = tmp_path / "h.sqlite"
    shutil.copy(FIXTURES / f"schema-{revision}.sqlite", db)
    url = f"sqlite:///{db}"
    before, after = upgrade_store(url)
    assert before == revision and after == SCHEMA_REVISION
    with open_store(url) as st:
        assert current_revision(st.engine) == SCHEMA_REVISION
        runs = st.list_runs()
        assert len(runs) == 2 and {r.suite for r in runs} == {"fixture"}
        older = runs[-1]
        assert sorted(older.tags) == ["fixture", "quote's"]
        rows = st.rows(older.id)
        assert len(rows) == older.n_rows == 6
        assert older.pass_rate == pytest.approx(sum(r.passed is True for r in rows) / 6)
        assert st.manifest(older.id).run_id == older.id  # type: ignore[union-attr]


def test_a_newer_schema_is_refused_and_left_alone(tmp_path: Path) -> None:
    db = tmp_path / "h.sqlite"
    shutil.copy(FIXTURES / f"schema-{SCHEMA_REVISION}.sqlite", db)
    con = sqlite3.connect(db)
    con.execute("UPDATE alembic_version SET version_num = '9999'")
    con.commit()
    con.close()
    before = db.read_bytes()
    for attempt in (lambda: open_store(f"sqlite:///{db}"), lambda: upgrade_store(f"sqlite:///{db}")):
        with pytest.raises(StoreError, match="newer referee"):
            attempt()
    assert db.read_bytes() == before


def test_a_version_1_manifest_still_reads() -> None:
    m = RunManifest.model_validate({"manifest_version": 1, "kind": "judge"})
    assert m.run_id is None
    with pytest.raises(ValueError, match="extra"):
        RunManifest.model_validate({"manifest_version": 2, "kind": "judge", "unknown_field": 1})
