"""The compare page's scatter of baseline against candidate scores stays small on large runs: one dot per few
pixels and kind of change, each merged dot saying how many cases it stands for."""

from __future__ import annotations

import random
import re

from referee.reports._charts import Pair, flips


def test_twenty_thousand_cases_make_a_bounded_chart_that_counts_every_case() -> None:
    rng = random.Random(5)
    pairs = []
    for i in range(20000):
        b, c = rng.random(), rng.random()
        change = "regression" if b >= 0.7 > c else "improvement" if c >= 0.7 > b else "same"
        pairs.append(Pair(f"case-{i}", b, c, change))
    svg = flips(pairs, title="t", threshold=0.7).svg
    counts = [int(n) for n in re.findall(r'data-n="(\d+)"', svg)]
    assert sum(counts) == 20000  # every case is in some dot
    assert len(counts) <= 3 * 57 * 57 and len(svg) < 800_000  # was one 130-byte dot per case: 2.7 MB
    assert re.search(r"<title>\d+ cases \(regression\), about [\d.]+ -> [\d.]+: case-\d+", svg)


def test_a_few_cases_keep_one_dot_each_with_its_id() -> None:
    pairs = [Pair("a<b>", 0.9, 0.2, "regression"), Pair("c", 0.1, 0.95, "improvement"), Pair("d", None, 0.5, "added")]
    svg = flips(pairs, title="t", threshold=0.7).svg
    assert re.findall(r'data-n="(\d+)"', svg) == ["1", "1"]
    assert "a&lt;b&gt;: 0.900 -> 0.200 (regression)" in svg and "<b>" not in svg
