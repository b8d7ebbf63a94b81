"""Tables folded to the terminal's width: every column kept, every name whole (wrapped, never cut)."""

from __future__ import annotations

import pytest

from referee._util._fold import fold, terminal_width, text_table, wrap_cell


def test_fold_keeps_every_column_and_repeats_the_key() -> None:
    groups, key_w = fold([10, 12, 12, 12, 12, 12, 12], 40, sep=2)
    assert [i for g in groups for i in g if i != 0] == [1, 2, 3, 4, 5, 6]
    assert all(g[0] == 0 for g in groups) and len(groups) > 1
    assert all(key_w + sum(2 + [10, 12, 12, 12, 12, 12, 12][i] for i in g[1:]) <= 40 for g in groups)
    groups, _ = fold([5, 5, 5], 80)
    assert groups == [[0, 1, 2]]


def test_wrap_cell_loses_nothing() -> None:
    name = "a_very_long_category_name/with-parts.and.more and words"
    lines = wrap_cell(name, 9)
    assert all(len(x) <= 9 for x in lines)
    assert "".join(lines).replace(" ", "") == name.replace(" ", "")
    assert wrap_cell("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]


def test_text_table_fits_and_keeps_every_cell() -> None:
    head = ["target", *(f"evaluator number {i}" for i in range(8))]
    rows = [["prompt-v1-with-a-long-name", *(f"{60 + i}% [4{i}%, 9{i}%]" for i in range(8))],
            ["v2", *("-" for _ in range(8))]]
    out = text_table(head, rows, 80)
    assert max(len(x) for x in out) <= 80
    text = "\n".join(out)
    for i in range(8):
        assert f"{60 + i}% [4{i}%, 9{i}%]" in text  # numbers are never wrapped
    assert text.count("v2") >= 2  # the key column heads every part
    assert "…" not in text


@pytest.mark.parametrize(("env", "want"), [("80", 80), ("10", 40), ("99999", 1000), ("wide", 120)])
def test_terminal_width_honours_columns(env: str, want: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", env)
    assert terminal_width() == want  # stdout is not a terminal under pytest: 120 when COLUMNS is not a number


def test_wide_characters_take_two_columns_and_a_cut_ends_in_a_tilde() -> None:
    from referee._util._fold import columns, fit_columns, pad_columns

    assert columns("abc") == 3 and columns("評価") == 4 and columns("e\u0301") == 1  # a combining accent: none
    assert fit_columns("評価スイート", 7) == "評価ス~" and columns(fit_columns("評価スイート", 7)) == 7
    assert fit_columns("評価スイート", 6) == "評価~" and columns(fit_columns("評価スイート", 6)) == 5  # no half
    assert pad_columns("評価", 6) == "評価  " and pad_columns("abcdefgh", 6) == "abcde~"


def test_a_text_table_of_wide_characters_lines_up_and_fits() -> None:
    # Measured in characters, a Japanese category took twice its column and pushed the others out of line.
    from rich.cells import cell_len

    from referee._util._fold import text_table, wrap_cell

    rows = [["請求書と返金の問い合わせ", "12", "0.75"], ["billing", "3", "1.00"]]
    lines = text_table(["category", "cases", "mean"], rows, 80, right=[False, True, True])
    assert len({cell_len(line) for line in lines}) == 1  # every line as wide: the columns line up
    narrow = text_table(["category", "cases", "mean"], rows * 3, 30, right=[False, True, True])
    assert max(cell_len(line) for line in narrow) <= 30
    assert all(cell_len(part) <= 7 for part in wrap_cell("請求書と返金の問い合わせ", 7))
    assert "".join(wrap_cell("請求書と返金の問い合わせ", 7)) == "請求書と返金の問い合わせ"  # nothing left out
