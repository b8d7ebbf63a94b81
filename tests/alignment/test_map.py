"""The score map: monotone, least squares, snapped to levels, and its pass mark."""

from __future__ import annotations

import numpy as np
import pytest

from referee.alignment import fit_map


def test_the_map_is_monotone_and_fits_a_monotone_relation() -> None:
    rng = np.random.default_rng(0)
    x = rng.random(200)
    y = x**2 + rng.normal(0, 0.05, 200)
    m = fit_map(x.tolist(), y.tolist())
    grid = np.linspace(-0.5, 1.5, 400)
    out = m(grid)
    assert np.all(np.diff(out) >= -1e-12)
    assert np.abs(m(x) - x**2).mean() < 0.05


def test_a_decreasing_relation_becomes_flat_never_inverted() -> None:
    m = fit_map([0.1, 0.2, 0.3, 0.4], [4.0, 3.0, 2.0, 1.0])
    assert np.allclose(m([0.1, 0.4]), [2.5, 2.5])


def test_tied_scores_share_a_value_and_levels_snap() -> None:
    m = fit_map([0.5, 0.5, 0.9, 0.9], [0.0, 1.0, 1.0, 1.0], levels=[0.0, 1.0])
    assert m([0.5]).tolist() == [1.0]  # halfway (0.5) goes to the upper level, as the pass mark says
    assert m.pass_mark(1.0) == 0.5
    assert set(m(np.linspace(0, 1, 11)).tolist()) <= {0.0, 1.0}


@pytest.mark.parametrize(("level", "expected"), [(1.0, 0.5), (0.5, 0.3)])
def test_pass_mark_is_where_the_map_first_reaches_the_level(level: float, expected: float) -> None:
    m = fit_map([0.1, 0.3, 0.5, 0.7], [0.0, 0.5, 1.0, 1.0])
    assert m.pass_mark(level) == pytest.approx(expected)
    assert fit_map([0.1, 0.3], [0.0, 0.2]).pass_mark(1.0) is None


def test_pass_mark_with_levels_is_the_midpoint_crossing() -> None:
    m = fit_map([0.2, 0.4, 0.6, 0.8], [0.0, 0.0, 1.0, 1.0], levels=[0.0, 1.0])
    assert m.pass_mark(1.0) == pytest.approx(0.5)
    assert m([0.49, 0.51]).tolist() == [0.0, 1.0]
