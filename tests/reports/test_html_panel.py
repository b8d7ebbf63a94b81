"""The HTML report's judge-panel section (``referee report``): the figures ``referee score --json-out``
writes (and ``referee calibrate`` with human labels), for a real panel run against the local server; no
section without a panel; hostile judge names and rationales escaped by the template."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from referee.calibrate import panel_agreement
from referee.reports import render_html
from referee.results import read_results
from referee.testing import FakeLLMServer
from tests.support.cli import run_cli
from tests.support.panels import (
    HOSTILE_MODEL,
    HOSTILE_REASON,
    human_labels,
    interval,
    run_panel,
    score_panels,
)


def _report(results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    out = tmp_path / "report.html"
    code, _, err = run_cli(["report", str(results), "--html", str(out)], capsys)
    assert code == 0, err
    return out.read_text()


def _section(page: str) -> str:
    start = page.index('<h2 id="panels">')
    return page[start:page.index("<h2>", start + 1)]


def _cells(section: str, table: str) -> list[list[str]]:
    """The data cells of one of the section's tables, unescaped (what a reader sees)."""
    body = re.search(rf'<table class="{table}">(.*?)</table>', section, re.S)
    assert body is not None, section
    return [[html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", tr)]
            for tr in re.findall(r"<tr>(.*?)</tr>", body.group(1)) if "<td>" in tr]


def test_the_section_shows_the_figures_score_writes(fake_server: FakeLLMServer, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    _, results = run_panel(fake_server, tmp_path, capsys)
    p = score_panels(results, tmp_path, capsys)[0]
    sec = _section(_report(results, tmp_path, capsys))
    text = html.unescape(re.sub(r"<[^>]+>", "", sec))
    assert (f"judge: 3 judges ({', '.join(p['judges'])}), {p['cases']} cases, {p['split']} split, "
            f"cost ${p['cost_usd']:.4f}") in text
    assert 0 < p["split"] < p["cases"]
    e = p["effective_votes"]
    assert (f"Krippendorff's alpha {interval(p['alpha'])}; effective independent votes "
            f"{e['estimate']:.2f} of {e['k']} (from their agreement; with no labels, a floor).") in text
    assert _cells(sec, "panel-kappa") == [[f"{k['a']} vs {k['b']}", f"{k['kappa']:.3f}", f"{k['agreement']:.1%}",
                                           str(k["n"])] for k in p["kappas"]]
    assert p["warnings"] and all(w in text for w in p["warnings"])
    assert 'class="panel-human"' not in sec  # no labels given to `referee report`


def test_with_human_labels_the_section_shows_the_figures_calibrate_writes(
        fake_server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, results = run_panel(fake_server, tmp_path, capsys)
    human, labels = human_labels(tmp_path)
    js = tmp_path / "cal.json"
    code, _, err = run_cli(["calibrate", str(results), str(human), "--threshold", "1", "--json-out", str(js)],
                           capsys)
    assert code == 0, err
    want = json.loads(js.read_text())["panels"][0]
    rows = read_results(results).rows
    sec = _section(render_html(rows, panels=panel_agreement(rows, labels)))
    # the command gives the same section with --human
    out = tmp_path / "labelled.html"
    code, _, err = run_cli(["report", str(results), "--html", str(out), "--human", str(human)], capsys)
    assert code == 0, err
    assert _section(out.read_text()) == sec
    assert f"Vs human labels ({len(labels)} cases)" in sec
    expected = [["panel", interval(want["panel_vs_human"]), ""]]
    for m in want["members_vs_human"]:
        d = m["panel_minus_judge"]
        expected.append([m["judge"], interval(m["agreement"]),
                         f"{d['diff'] * 100:+.1f} pts [{d['lo'] * 100:+.1f}, {d['hi'] * 100:+.1f}] "
                         f"p={d['p_value']:.3f}"])
    assert _cells(sec, "panel-human") == expected
    assert "error correlation on the human labels" in sec


def test_a_run_without_a_panel_has_no_section(fake_server: FakeLLMServer, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    _, results = run_panel(fake_server, tmp_path, capsys, panel=False)
    page = _report(results, tmp_path, capsys)
    assert "<h2>Cases</h2>" in page and 'id="panels"' not in page and "Krippendorff" not in page


def test_hostile_judge_names_and_rationales_are_escaped(fake_server: FakeLLMServer, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    _, results = run_panel(fake_server, tmp_path, capsys)
    page = _report(results, tmp_path, capsys)
    assert "<b>x</b>" not in page
    assert html.escape(HOSTILE_MODEL, quote=False) in _section(page)
    one = tmp_path / "one"
    one.mkdir()
    _, results = run_panel(fake_server, one, capsys, panel=False)
    page = _report(results, one, capsys)
    assert "<script>" not in page and HOSTILE_REASON not in page
    assert html.escape(HOSTILE_REASON, quote=False) in page
