"""The coverage page of ``referee synth --html``: drawn from the summary alone, every name escaped, nothing empty
drawn as a zero."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.reports import render_synth_html


def test_a_run_that_kept_nothing_says_so_and_states_the_shortfall() -> None:
    page = render_synth_html({"requested": 5, "kept": 0, "candidates": 5, "rounds": 1,
                              "shortfall": "0 of 5 cases kept: <b>round 1</b> kept no new case",
                              "kinds": {}, "coverage": {"document": {}, "kind": {}, "persona": {}},
                              "rejections": {"duplicate": 0, "critic": 5}})
    assert "0 of 5 cases kept from 5 candidates" in page
    assert "&lt;b&gt;round 1&lt;/b&gt;" in page and "<b>" not in page
    assert page.count(">nothing<") == 3  # documents, kinds, personas: nothing to draw
    assert "critic: 5" in page and "duplicate: 0" in page


def test_document_bars_scale_to_the_largest_count() -> None:
    page = render_synth_html({"requested": 3, "kept": 3, "candidates": 3, "rounds": 1, "kinds": {},
                              "coverage": {"document": {"a.md": 2, "b.md": 1}, "kind": {}, "persona": {}},
                              "rejections": {}})
    widths = [float(x.split('"')[0]) for x in page.split('class="bar" x="170" y="')[1:] for x in
              [x.split('width="', 1)[1]]]
    assert widths == [230.0, 115.0]


# -- the coverage section of `referee report` -----------------------------------------------------------------

HOSTILE_DOC = '<script>window.__xss=1</script>.md'
HOSTILE_PERSONA = '<img src=x onerror="window.__xss=2">'


def test_referee_report_shows_the_coverage_of_generated_cases_with_hostile_names_escaped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import re

    from tests.support.cli import run_cli
    from tests.support.synth_runs import generate_and_run

    result, results = generate_and_run(tmp_path, names=(HOSTILE_DOC, "shipping.md"),
                                       personas=(HOSTILE_PERSONA, "support agent"))
    page = tmp_path / "report.html"
    code, _, err = run_cli(["report", str(results), "--html", str(page)], capsys)
    assert code == 0, err
    html = page.read_text()
    section = html[html.index('<section id="synth-coverage">'):]
    section = section[:section.index("</section>")]
    assert f"{len(result.cases)} generated case" in section
    assert "<script>" not in html and "<img src=x" not in html
    assert f"&lt;script&gt;window.__xss=1&lt;/script&gt;.md: {result.coverage()['document'][HOSTILE_DOC]}" in section
    shown = dict(re.findall(r'<rect class="bar"[^>]*><title>([^<]*): ([^<]*)</title>', section))
    import html as html_lib

    cov = result.coverage()
    assert {html_lib.unescape(k): v for k, v in shown.items() if html_lib.unescape(k) in cov["persona"]} == \
        {k: str(v) for k, v in cov["persona"].items()}


def test_a_report_of_cases_not_generated_has_no_coverage_section(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from tests.support.cli import run_cli

    results = tmp_path / "r.jsonl"
    results.write_text(json.dumps({"schema_version": 1, "id": "a", "status": "scored", "score": 1.0,
                                   "passed": True, "evaluator": "x", "metadata": {"persona": "p"}}) + "\n")
    page = tmp_path / "report.html"
    code, _, err = run_cli(["report", str(results), "--html", str(page)], capsys)
    assert code == 0, err
    assert "synth-coverage" not in page.read_text()


def test_a_hundred_documents_draw_thirty_bars_and_count_the_rest() -> None:
    from referee.reports import coverage_charts

    cov = {"cases": 100, "document": {f"d{i:03d}": 1 for i in range(100)}, "kind": {}, "persona": {},
           "targets": {}}
    docs = coverage_charts(cov)[0].svg
    assert docs.count('class="bar"') == 30 and "(71 more): 71" in docs


def test_rows_without_metadata_take_the_coverage_from_the_cases_file(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from tests.support.cli import run_cli
    from tests.support.synth_runs import generate_and_run

    result, results = generate_and_run(tmp_path)
    bare = tmp_path / "bare.jsonl"
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    bare.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "metadata"}) + "\n" for r in rows))
    page = tmp_path / "report.html"
    code, _, err = run_cli(["report", str(bare), "--html", str(page)], capsys)
    assert code == 0, err
    assert "synth-coverage" not in page.read_text()
    code, _, err = run_cli(["report", str(bare), "--html", str(page), "--cases", str(tmp_path / "cases.jsonl")],
                           capsys)
    assert code == 0, err
    assert f"{len(result.cases)} generated cases" in page.read_text()
