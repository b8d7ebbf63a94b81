"""The coverage page of ``referee synth --html``: drawn from the summary alone, every name escaped, nothing empty
drawn as a zero."""

from __future__ import annotations

from referee.reports import render_synth_html


def test_a_run_that_kept_nothing_says_so_and_states_the_shortfall():
    page = render_synth_html({"requested": 5, "kept": 0, "candidates": 5, "rounds": 1,
                              "shortfall": "0 of 5 cases kept: <b>round 1</b> kept no new case",
                              "kinds": {}, "coverage": {"document": {}, "kind": {}, "persona": {}},
                              "rejections": {"duplicate": 0, "critic": 5}})
    assert "0 of 5 cases kept from 5 candidates" in page
    assert "&lt;b&gt;round 1&lt;/b&gt;" in page and "<b>" not in page
    assert page.count(">nothing<") == 3  # documents, kinds, personas: nothing to draw
    assert "critic: 5" in page and "duplicate: 0" in page


def test_document_bars_scale_to_the_largest_count():
    page = render_synth_html({"requested": 3, "kept": 3, "candidates": 3, "rounds": 1, "kinds": {},
                              "coverage": {"document": {"a.md": 2, "b.md": 1}, "kind": {}, "persona": {}},
                              "rejections": {}})
    widths = [float(x.split('"')[0]) for x in page.split('class="bar" x="170" y="')[1:] for x in
              [x.split('width="', 1)[1]]]
    assert widths == [230.0, 115.0]
