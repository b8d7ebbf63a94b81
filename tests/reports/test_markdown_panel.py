"""The Markdown summary's judge-panel section (``referee run --markdown``, ``referee score --markdown``): the
figures ``referee score --json-out`` writes (and ``referee calibrate`` with human labels), for a real panel run
against the local server; no section without a panel; hostile judge names and rationales escaped."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from referee.aggregate import ScoreOptions, load_table, summarize
from referee.calibrate import panel_agreement
from referee.reports import render_markdown
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

# The hostile model name as the Markdown must write it: HTML escaped, Markdown syntax backslashed, the
# URL's scheme separator broken so GitHub does not link it.
ESCAPED = "evil\\|&lt;b&gt;x&lt;/b&gt;\\*\\_\\[l\\]\\(http:\u2060//e.x\\)"


def _name(judge: str) -> str:
    return judge.replace(HOSTILE_MODEL, ESCAPED)


def _section(md: str) -> str:
    start = md.index("**Judge panels**")
    end = md.find("| gate |", start)
    return md[start:] if end < 0 else md[start:end]


def _unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def _score_md(results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, list[dict[str, Any]]]:
    md = tmp_path / "score.md"
    panels = score_panels(results, tmp_path, capsys, "--markdown", str(md))
    return md.read_text(), panels


def test_the_section_shows_the_figures_score_writes(fake_server: FakeLLMServer, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    _, results = run_panel(fake_server, tmp_path, capsys, "--markdown", str(tmp_path / "run.md"))
    md, panels = _score_md(results, tmp_path, capsys)
    assert len(panels) == 1
    p = panels[0]
    sec = _section(md)
    names = [_name(j) for j in p["judges"]]
    assert (f"*judge*: 3 judges ({', '.join(names)}), {p['cases']} cases, {p['split']} split, "
            f"cost ${p['cost_usd']:.4f}") in sec
    assert 0 < p["split"] < p["cases"]  # the judges disagree on some cases only: the figures are not trivial
    e = p["effective_votes"]
    assert (f"Krippendorff's alpha {interval(p['alpha'])}; effective independent votes "
            f"{e['estimate']:.2f} of {e['k']} (from their agreement; with no labels, a floor).") in sec
    rows = [ln for ln in sec.splitlines() if " vs " in ln and ln.startswith("|")]
    assert len(rows) == len(p["kappas"]) == 3
    for k, line in zip(p["kappas"], rows, strict=True):
        assert line == (f"| {_name(k['a'])} vs {_name(k['b'])} | {k['kappa']:.3f} | {k['agreement']:.1%} | "
                        f"{k['n']} |")
    # The two gpt-* judges share a family: the warning is there, as in `referee score`.
    assert p["warnings"] and all(f"> ⚠ {w}" in sec for w in p["warnings"])
    # `referee run --markdown` writes the same section from the same rows.
    assert _section((tmp_path / "run.md").read_text()) == sec
    # Compact: every table line of the section fits 80 columns (except where a judge's name is long).
    assert all(len(ln) <= 80 for ln in sec.splitlines() if ln.startswith("|") and ESCAPED not in ln)


def test_with_human_labels_the_section_shows_the_figures_calibrate_writes(
        fake_server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, results = run_panel(fake_server, tmp_path, capsys)
    human, labels = human_labels(tmp_path)
    js = tmp_path / "cal.json"
    code, _, err = run_cli(["calibrate", str(results), str(human), "--threshold", "1", "--json-out", str(js)],
                           capsys)
    assert code == 0, err
    want = json.loads(js.read_text())["panels"][0]
    assert want["labelled"] == len(labels)
    summary = summarize(load_table(str(results)), ScoreOptions())
    md = render_markdown(summary, [], 0, panels=panel_agreement(read_results(results).rows, labels))
    sec = _section(md)
    assert f"| vs human labels ({len(labels)} cases) | agreement | panel - judge |" in sec
    assert f"| panel | {interval(want['panel_vs_human'])} | |" in sec
    for m in want["members_vs_human"]:
        d = m["panel_minus_judge"]
        diff = (f"{d['diff'] * 100:+.1f} pts [{d['lo'] * 100:+.1f}, {d['hi'] * 100:+.1f}] "
                f"p={d['p_value']:.3f}")
        assert f"| {_name(m['judge'])} | {interval(m['agreement'])} | {diff} |" in sec
    assert "effective independent votes" in sec and "error correlation on the human labels" in sec
    assert any("have no human label" in w for w in want["warnings"])


def test_a_run_without_a_panel_has_no_section(fake_server: FakeLLMServer, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    _, results = run_panel(fake_server, tmp_path, capsys, "--markdown", str(tmp_path / "run.md"), panel=False)
    md = tmp_path / "score.md"
    code, _, err = run_cli(["score", str(results), "--markdown", str(md)], capsys)
    assert code == 0, err
    for text in (md.read_text(), (tmp_path / "run.md").read_text()):
        assert "Lowest-scoring cases" in text and "Judge panels" not in text and "Krippendorff" not in text


def test_hostile_judge_names_and_rationales_are_escaped(fake_server: FakeLLMServer, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    _, results = run_panel(fake_server, tmp_path, capsys)
    md, _ = _score_md(results, tmp_path, capsys)
    assert "<b>" not in md and HOSTILE_MODEL not in md
    assert ESCAPED in _section(md)
    for line in _section(md).splitlines():
        if line.startswith("| openai:"):  # a kappa row: its four cells, whatever the names hold
            assert _unescaped_pipes(line) == 5, line
    # One judge, the hostile one: its rationale is the rows' and is listed with the lowest-scoring cases.
    one = tmp_path / "one"
    one.mkdir()
    _, results = run_panel(fake_server, one, capsys, panel=False)
    md_path = one / "score.md"
    code, _, err = run_cli(["score", str(results), "--markdown", str(md_path)], capsys)
    assert code == 0, err
    text = md_path.read_text()
    assert "<script>" not in text and HOSTILE_REASON not in text
    assert "&lt;script&gt;alert\\(1\\)&lt;/script&gt; \\| \\*bold\\*" in text
