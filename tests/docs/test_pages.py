"""The doc-test harness (tests/docs/pages.py): a page's fixture folder takes the example's own files by name."""

from __future__ import annotations

import filecmp
from pathlib import Path

import pytest

from referee.example import DATA
from tests.docs.pages import FIXTURES, FROM_EXAMPLE, from_example


def test_every_listed_example_file_exists_and_no_fixture_copies_one() -> None:
    """Each ``from-example.txt`` names files of the example's data, and no fixture folder keeps a copy of an
    example file (a copy drifts; the listing takes the file itself)."""
    listed = 0
    example = [p for p in DATA.rglob("*") if p.is_file()]
    for folder in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        for name, data in from_example(folder):
            assert data.is_file() and not (folder / name).exists(), (folder.name, name)
            listed += 1
        for f in (p for p in folder.rglob("*") if p.is_file() and p.name != FROM_EXAMPLE):
            same = [d for d in example if d.stat().st_size == f.stat().st_size and filecmp.cmp(f, d, shallow=False)]
            assert not same, f"{f.relative_to(FIXTURES)} is a copy of the example's {same[0].relative_to(DATA)}"
    assert listed > 0


def test_a_listing_naming_no_example_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / FROM_EXAMPLE).write_text("# a comment\n\ncases.jsonl  after.jsonl\nold.jsonl  no/such.jsonl\n")
    with pytest.raises(AssertionError, match=r"from-example.txt:4: `NAME PATH`"):
        from_example(tmp_path)
    (tmp_path / FROM_EXAMPLE).write_text("cases.jsonl\n")
    with pytest.raises(AssertionError, match=r":1: "):
        from_example(tmp_path)
    (tmp_path / FROM_EXAMPLE).write_text("cases.jsonl  after.jsonl\n")
    assert from_example(tmp_path) == [("cases.jsonl", DATA / "after.jsonl")]
