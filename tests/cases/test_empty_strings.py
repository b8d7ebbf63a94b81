"""An empty string in a DataFrame is a value: it reaches the case and a user function as "", not None (a
DataFrame tells "" from a missing cell; a CSV file does not, and its empty cells stay missing)."""

from __future__ import annotations

from pathlib import Path

import pytest

import referee
from referee.cases import cases_from, load_cases

pd = pytest.importorskip("pandas")


def test_empty_output_in_a_pandas_dataframe_stays_a_string() -> None:
    df = pd.DataFrame({"id": ["a", "b", "c"], "output": ["", "4", None], "reference": ["", "4", "x"]})
    cases = cases_from(df).cases
    assert [c.output for c in cases] == ["", "4", None]
    assert cases[0].get("reference") == ""

    seen: list[object] = []

    def is_empty(output: object) -> bool:
        seen.append(output)
        return output == ""

    result = referee.evaluate(df.iloc[:2], evaluators=[is_empty])
    assert seen == ["", "4"]
    assert [r.passed for r in result.rows] == [True, False]


def test_empty_output_in_a_polars_dataframe_stays_a_string() -> None:
    pl = pytest.importorskip("polars")
    cases = cases_from(pl.DataFrame({"output": ["", "x"]})).cases
    assert [c.output for c in cases] == ["", "x"]


def test_an_empty_id_or_category_in_a_dataframe_is_still_missing() -> None:
    cases = cases_from(pd.DataFrame({"id": ["", "b"], "category": ["", "m"], "output": ["1", "2"]})).cases
    assert [c.id for c in cases] == ["1", "b"]
    assert [c.category for c in cases] == [None, "m"]


def test_an_empty_csv_cell_is_still_missing(tmp_path: Path) -> None:
    p = tmp_path / "cases.csv"
    p.write_text("id,output\na,\nb,x\n", encoding="utf-8")
    assert [c.output for c in load_cases(p).cases] == [None, "x"]
