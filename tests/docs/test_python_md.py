"""docs/python.md keeps the examples it promises (its blocks themselves run as tests: tests/docs/pages.py)."""

from __future__ import annotations

from pathlib import Path

from tests.docs.pages import blocks

DOC = Path(__file__).resolve().parents[2] / "docs" / "python.md"


def test_the_page_has_the_examples_it_promises() -> None:
    code = "\n".join(b.source for b in blocks(DOC) if b.lang == "python")
    for needle in ("referee.evaluate(outputs", "referee.judges.Rubric(", "referee.judges.Pairwise(",
                   "pd.DataFrame(", ".to_pandas()", "await referee.evaluate_async(", ".save(",
                   "referee.grade("):
        assert needle in code, needle
    assert [b.lang for b in blocks(DOC)].count("output") >= 4  # what the examples print is on the page
