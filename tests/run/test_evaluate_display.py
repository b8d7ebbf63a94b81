"""``EvalResult``, its summary, the baseline comparison and the gates display as compact HTML tables in a
notebook (``_repr_html_``) and as rich tables in a terminal (``__rich__``): the verdict line first, every case
text escaped, no external resource; their ``repr`` is one short line."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rich.console import Console

import referee

HOSTILE_ID = "<script>alert(1)</script>"
HOSTILE_CATEGORY = "<img src=x onerror=alert(2)>"


def _cases(good: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"id": HOSTILE_ID, "category": HOSTILE_CATEGORY, "output": "5", "reference": "4"}]
    out += [{"id": f"c{i}", "category": "math", "output": "4" if i < good else "3", "reference": "4"}
            for i in range(10)]
    return out


def _rich_text(obj: object) -> str:
    console = Console(record=True, width=100, color_system=None)
    console.print(obj)
    return console.export_text()


def _assert_safe(html: str) -> None:
    assert "<table" in html
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(2)&gt;" in html
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", html)  # nothing fetched


def test_a_failed_run_says_why_first_and_escapes_case_text() -> None:
    result = referee.evaluate(_cases(good=5), evaluators=["equals"], gates={"fail_under": 0.9})
    assert not result.passed
    html = result._repr_html_()
    _assert_safe(html)
    first_text = re.sub(r"<[^>]+>", "\n", html).split("\n")
    headline = next(t for t in first_text if t.strip())
    assert headline.startswith("FAILED: --fail-under: pass rate 45.5% &lt; 90.0%")
    assert "45.5% [" in html  # the pass rate with its interval
    assert html.index("gates: 1 of 1 failed") > html.index("pass rate [95% CI]")  # the gates section
    text = _rich_text(result)
    assert text.splitlines()[0].startswith("FAILED: --fail-under")
    assert HOSTILE_ID in text and "math" in text


def test_a_passed_run_and_its_parts() -> None:
    result = referee.evaluate(_cases(good=10), evaluators=["equals"], gates={"fail_under": 0.5})
    assert result.passed
    html = result._repr_html_()
    assert html.index("PASSED: 11 of 11 rows scored") < html.index("<table")
    s = result.summary
    shtml = s._repr_html_()
    _assert_safe(shtml)
    assert str(s.overall.pass_rate) in shtml and str(s.overall.mean) in shtml
    assert "math" in _rich_text(s)
    ghtml = result.gates._repr_html_()
    assert "<table" in ghtml and "--fail-under" in ghtml and "passed" in ghtml
    assert "--fail-under" in _rich_text(result.gates)
    for obj in (result, s, s.overall, result.gates):
        r = repr(obj)
        assert "\n" not in r and len(r) < 300, r
    assert repr(s).startswith("<Summary 11 cases scored: pass rate 90.9% [")


def test_the_baseline_comparison_displays_its_verdict_and_regressions(tmp_path: Path) -> None:
    base = referee.evaluate(_cases(good=10), evaluators=["equals"]).save(tmp_path / "base.jsonl")
    result = referee.evaluate(_cases(good=4), evaluators=["equals"],
                              gates={"baseline": str(base), "fail_on_regression": True})
    comp = result.summary.comparison
    assert comp is not None and comp.regression_count == 6
    html = comp._repr_html_()
    assert html.index(comp.verdict) < html.index("<table")
    assert "regressions" in html and "c9" in html
    r = repr(comp)
    assert "\n" not in r and len(r) < 300 and "6 regressions" in r
    assert comp.verdict in _rich_text(comp)
    shtml = result._repr_html_()
    assert shtml.startswith('<div class="referee"><div style="color:#cf222e;font-weight:bold">FAILED:')
    _assert_safe(shtml)


def test_terminal_escapes_and_bidi_controls_in_case_text_never_reach_a_terminal_or_a_notebook() -> None:
    # rich escapes its own markup, not a terminal's: an ESC in a case id went through `print(result)` in a
    # terminal as it was (here it would retitle the window and clear the screen).
    cases = [{"id": "x\x1b]0;pwned\x07\x1b[2J", "category": "c\x1b[31mred", "output": "4", "reference": "5"},
             {"id": "rtl\u202egnp.exe", "category": "math", "output": "4", "reference": "4"}]
    result = referee.evaluate(cases, evaluators=["equals"], gates={"fail_under": 0.9})
    for shown in (result, result.summary, result.summary.overall):
        console = Console(record=True, width=100, force_terminal=True)
        console.print(shown)
        raw = console.export_text(styles=False)
        assert "\x1b" not in raw and "\x07" not in raw and "\u202e" not in raw, type(shown)
        html = shown._repr_html_() if hasattr(shown, "_repr_html_") else ""
        assert "\x1b" not in html and "\u202e" not in html
    assert "x]0;pwned[2J" in _rich_text(result) and "rtl&lt;U+202E&gt;gnp.exe" in result._repr_html_()
