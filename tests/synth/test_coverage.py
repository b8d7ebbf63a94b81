"""The coverage report: one computation (``coverage_of``) over the kept cases or over a suite run's rows gives the
same figures, and the terminal table and the charts show exactly them."""

from __future__ import annotations

import json
import re
from pathlib import Path

from referee.reports import coverage_charts
from referee.results import read_results
from referee.synth import coverage_of, coverage_table
from tests.support.synth_runs import generate_and_run


def _bars(svg: str) -> dict[str, str]:
    """Each bar's name and figure, from its tooltip (``name: figure``)."""
    return {m[0]: m[1] for m in re.findall(r'<rect class="bar"[^>]*><title>([^<]*): ([^<]*)</title>', svg)}


def test_rows_of_a_suite_run_give_the_generation_runs_own_figures(tmp_path: Path) -> None:
    result, results = generate_and_run(tmp_path)
    cov = result.coverage()
    assert cov["cases"] == 8 and sum(cov["kind"].values()) == 8
    assert set(cov["document"]) == {"refunds.md", "shipping.md"}
    assert sum(cov["persona"].values()) == 8 and set(cov["persona"]) == {"new customer", "support agent"}
    rows = read_results(results).rows
    assert coverage_of(rows) == cov  # the plan's targets are in the provenance too
    cases = [json.loads(line) for line in (tmp_path / "cases.jsonl").read_text().splitlines()]
    assert coverage_of(cases) == cov
    assert coverage_of(rows + rows) == cov  # each case counted once, however many rows it has


def test_the_table_and_the_charts_show_the_same_figures(tmp_path: Path) -> None:
    result, _ = generate_and_run(tmp_path)
    cov = result.coverage()
    table = coverage_table(result)
    assert coverage_table(cov) == table
    docs, kinds, personas = coverage_charts(cov)
    for name, n in cov["document"].items():
        assert _bars(docs.svg)[name] == str(n)
        assert re.search(rf"^  {re.escape(name)}\s+{n}\s", table, re.M)
    for name, n in cov["persona"].items():
        assert _bars(personas.svg)[name] == str(n)
    for name, n in cov["kind"].items():
        kept, target = f"{n / cov['cases']:.0%}", f"{cov['targets'][name]:.0%}"
        assert _bars(kinds.svg)[name] == kept
        assert re.search(rf"^  {name}\s+{n}\s+{re.escape(kept)} /\s+{re.escape(target)}$", table, re.M)
        assert f"<title>target {target}</title>" in kinds.svg


def test_items_without_synth_provenance_are_not_counted_and_bad_values_are_named_safely() -> None:
    items = [{"id": "a", "metadata": {}}, {"id": "b"}, {"id": "c", "metadata": {"synth": "not a mapping"}},
             {"id": "d", "metadata": {"persona": None, "synth": {"kind": None, "chunks": ["x.md#2", "y#z.md#1"],
                                                                   "generator": {"kinds": {"k": float("nan")}}}}}]
    cov = coverage_of(items)
    assert cov == {"cases": 1, "document": {"x.md": 1, "y#z.md": 1}, "kind": {"(none)": 1},
                   "persona": {"(none)": 1}, "targets": {}}
    assert "(kept / target)" not in coverage_table(cov)
    assert coverage_of([]) == {"cases": 0, "document": {}, "kind": {}, "persona": {}, "targets": {}}
