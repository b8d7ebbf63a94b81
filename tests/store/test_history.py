"""A stored run loaded whole (``load_run``): named as ``referee runs show`` names runs, and shown in a notebook and
a terminal as ``referee score`` reports it, under where and when it ran."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

import referee
from referee.errors import UserError
from referee.store import load_run, open_store

CASES = [{"id": f"c{i}", "output": "yes" if i % 4 else "no", "category": "greeting"} for i in range(8)]


def test_a_stored_run_is_loaded_by_name_and_displays_with_where_it_ran(store_url: str, tmp_path: Path) -> None:
    first = referee.evaluate(CASES, [{"contains": {"value": "yes"}}], name="demo", store=store_url,
                             out=tmp_path / "a.jsonl", tags=["nightly\x1b[2J"], progress=False)
    with open_store(store_url) as st:
        run = load_run(st, "last")  # a name, as `referee runs show last`; an id prefix still works
        assert run.run_id == first.run_id and load_run(st, first.run_id[:8]).run_id == first.run_id
        with pytest.raises(UserError, match="no complete runs recorded on branch 'no-such-branch'"):
            load_run(st, "no-such-branch")
        assert repr(run) == f"<StoredRun {first.run_id[:12]} demo complete: 8 rows>"
        html = run._repr_html_()
        assert html.startswith('<div class="referee"><div style="font-weight:bold">'
                               f"run {first.run_id[:12]}: 8 cases scored: pass rate 75.0% [")
        assert "suite run of demo, complete;" in html and "greeting" in html
        console = Console(record=True, width=80, force_terminal=True)
        console.print(run)
        text = console.export_text(styles=False)
        assert text.startswith(f"run {first.run_id[:12]}: 8 cases scored")
        # a tag is data: another store's runs may be imported, and its tags come with them
        assert "tags nightly[2J" in text and "\x1b[2J" not in text and "\x1b[2J" not in html
