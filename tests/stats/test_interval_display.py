"""An interval prints as a person reads it: rates as percentages, means to three places, ``n/a`` for a bound
the sample is too small for; its equality and JSON shape are those of its fields."""

from __future__ import annotations

import dataclasses

from referee.stats import Interval, mean_interval, wilson_interval


def test_a_rate_prints_as_percentages() -> None:
    w = wilson_interval(16, 19)
    assert w.lo is not None and w.hi is not None
    assert str(w) == f"{16 / 19 * 100:.1f}% [{w.lo * 100:.1f}%, {w.hi * 100:.1f}%]"
    assert str(w).startswith("84.2% [")
    assert repr(w) == str(w)


def test_a_mean_prints_to_three_places_and_missing_bounds_as_n_a() -> None:
    m = mean_interval([0.2, 0.5, 0.9, 0.7])
    assert m.lo is not None and m.hi is not None
    assert str(m) == f"0.575 [{m.lo:.3f}, {m.hi:.3f}]"
    assert str(mean_interval([0.5])) == "0.500 [n/a, n/a]"
    assert str(Interval(None, None, None, 0)) == "n/a [n/a, n/a]"
    assert "Interval(estimate=" not in repr(m)


def test_the_display_flag_changes_neither_equality_nor_the_json_shape() -> None:
    m = mean_interval([0.0, 1.0, 1.0, 0.0, 1.0])
    p = m.as_percent()
    assert p.percent and not m.percent
    assert p == m and str(p) != str(m)
    assert p.to_dict() == m.to_dict() == {"estimate": m.estimate, "lo": m.lo, "hi": m.hi, "n": 5}
    assert dataclasses.asdict(p) == dataclasses.asdict(m)
    assert "percent" not in dataclasses.asdict(p)
