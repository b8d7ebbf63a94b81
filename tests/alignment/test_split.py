"""The held-out split: fixed, stratified, grouped."""

from __future__ import annotations

import pytest

from referee.alignment import held_out_split
from referee.errors import UserError


def test_stratified_and_fixed_whatever_the_order() -> None:
    values = {f"c{i}": float(i % 2) for i in range(40)}
    a = held_out_split(values, seed=7)
    b = held_out_split(dict(reversed(list(values.items()))), seed=7)
    assert a == b
    ones = [c for c in a.heldout if values[c] == 1.0]
    assert len(a.heldout) == 20 and len(ones) == 10
    assert held_out_split(values, seed=8).heldout != a.heldout


def test_a_group_is_never_split() -> None:
    values = {f"c{i}": float(i % 3 == 0) for i in range(60)}
    groups = {c: f"g{i // 5}" for i, c in enumerate(values)}
    s = held_out_split(values, groups=groups, holdout=0.3)
    held = {groups[c] for c in s.heldout}
    assert held.isdisjoint({groups[c] for c in s.train})
    assert 10 <= len(s.heldout) <= 25 and s.grouped


def test_one_group_cannot_be_split() -> None:
    values = {f"c{i}": float(i % 2) for i in range(20)}
    with pytest.raises(UserError, match="cannot be split"):
        held_out_split(values, groups=dict.fromkeys(values, "same"))


def test_continuous_labels_are_split_by_quartile() -> None:
    values = {f"c{i}": i / 99 for i in range(100)}
    s = held_out_split(values, categorical=False)
    low = [c for c in s.heldout if values[c] < 0.25]
    assert 10 <= len(low) <= 15


def test_many_small_strata_still_give_both_sides() -> None:
    values = {f"c{i}": float(i) for i in range(11)}
    s = held_out_split(values)
    assert 5 <= len(s.heldout) <= 6 and s.train
