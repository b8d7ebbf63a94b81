"""Tables (CSV, Parquet, DataFrames) as cases: long cells within the data limit load, every column type a
template or a command can use, and decoded sizes bounded with an error naming the file, row and column."""

from __future__ import annotations

import datetime
import decimal
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from referee._util import _data
from referee.cases._case import cases_from, load_cases
from referee.errors import InputError
from referee.targets import generate_outputs

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


# -- CSV cells --------------------------------------------------------------------------------------------

def test_a_csv_cell_over_128_kb_loads(tmp_path: Path) -> None:
    long = "word " * 60_000  # 300 KB, over the csv module's default field limit
    p = tmp_path / "cases.csv"
    p.write_text(f'id,output\na,short\nb,"{long}"\nc,short\n', encoding="utf-8")
    cases = load_cases(p)
    assert [c.id for c in cases] == ["a", "b", "c"] and cases.cases[1].output == long


def test_a_csv_cell_over_the_limit_names_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_data, "MAX_CELL_BYTES", 1000)
    p = tmp_path / "cases.csv"
    p.write_text("id,output\na,short\nb,\"multi\nline\"\nc," + "x" * 2000 + "\nd,short\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_cases(p)
    assert str(exc.value).startswith(f"{p}:5:") and "larger than 1,000 bytes" in str(exc.value)
    q = tmp_path / "first.csv"
    q.write_text("id,output\nc," + "x" * 2000 + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"first.csv:2: a cell is larger than"):
        load_cases(q)


# -- column types -----------------------------------------------------------------------------------------

UTC = datetime.UTC
EXPECTED = {
    "when": "2026-03-01T12:30:00+00:00", "naive": "2026-03-01T12:30:00.250000", "day": "2026-03-01",
    "clock": "08:15:00", "took": 90.5, "price": "12.3400", "blob": "hello", "raw": "base64:/wA=",
    "nested": {"at": "2026-03-01T00:00:00"},
}


def _typed_table() -> Any:
    return pa.table({
        "id": ["a"], "input": ["q"],
        "when": pa.array([datetime.datetime(2026, 3, 1, 12, 30, tzinfo=UTC)], pa.timestamp("us", tz="UTC")),
        "naive": pa.array([datetime.datetime(2026, 3, 1, 12, 30, 0, 250000)], pa.timestamp("ns")),
        "day": pa.array([datetime.date(2026, 3, 1)], pa.date32()),
        "clock": pa.array([datetime.time(8, 15)], pa.time64("us")),
        "took": pa.array([datetime.timedelta(seconds=90, milliseconds=500)], pa.duration("ms")),
        "price": pa.array([decimal.Decimal("12.3400")], pa.decimal128(10, 4)),
        "blob": pa.array([b"hello"], pa.binary()),
        "raw": pa.array([b"\xff\x00"], pa.binary()),
        "nested": pa.array([{"at": datetime.datetime(2026, 3, 1)}], pa.struct([("at", pa.timestamp("s"))])),
    })


def test_parquet_timestamps_decimals_and_bytes_become_json_values(tmp_path: Path) -> None:
    p = tmp_path / "cases.parquet"
    pq.write_table(_typed_table(), p)
    [case] = load_cases(p).cases
    assert {k: case.data[k] for k in EXPECTED} == EXPECTED
    json.dumps(case.data)  # every value is JSON


def test_dataframe_timestamps_decimals_and_bytes_become_json_values() -> None:
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({
        "id": ["a", "b"], "input": ["q", "r"],
        "when": pd.to_datetime(["2026-03-01 12:30", None]).tz_localize("UTC"),
        "took": pd.to_timedelta(["90.5s", "1s"]),
        "day": [datetime.date(2026, 3, 1), datetime.date(2026, 3, 2)],
        "price": [decimal.Decimal("12.3400"), decimal.Decimal("NaN")],
        "blob": [b"hello", b"\xff\x00"],
    })
    a, b = cases_from(df).cases
    assert a.data["when"] == "2026-03-01T12:30:00+00:00" and "when" not in b.data  # NaT: a missing cell
    assert a.data["took"] == 90.5 and a.data["day"] == "2026-03-01" and a.data["price"] == "12.3400"
    assert "price" not in b.data and a.data["blob"] == "hello" and b.data["blob"] == "base64:/wA="
    json.dumps([a.data, b.data])


def test_a_command_target_gets_every_parquet_column(tmp_path: Path) -> None:
    p = tmp_path / "cases.parquet"
    pq.write_table(_typed_table(), p)
    (tmp_path / "echo.py").write_text("import json, sys\ncase = json.load(sys.stdin)\n"
                                      "print(json.dumps({'output': case['when'] + ' ' + case['price']}))\n",
                                      encoding="utf-8")
    [(_, gen)] = generate_outputs({"id": "t", "exec": "python echo.py"}, load_cases(p).cases, base_dir=tmp_path)
    assert gen.error is None and gen.output == "2026-03-01T12:30:00+00:00 12.3400"


def test_an_infinite_number_in_a_table_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "cases.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "score": [1.0, float("inf")]}), p)
    with pytest.raises(InputError, match=r"cases.parquet:2: field 'score': inf is not a finite number"):
        load_cases(p)


# -- decoded sizes ----------------------------------------------------------------------------------------

def test_a_parquet_cell_over_the_limit_is_refused_before_decoding(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_data, "MAX_CELL_BYTES", 10_000)
    p = tmp_path / "big.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "input": ["q", "x" * 3_000_000]}), p, compression="zstd")
    assert p.stat().st_size < 10_000  # a small file ...
    with pytest.raises(InputError) as exc:
        load_cases(p)
    assert "big.parquet" in str(exc.value) and "'input'" in str(exc.value) and "larger than 10,000" in str(exc.value)


def test_a_repeated_value_is_measured_per_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Dictionary-encoded: one 5 KB value stored once; many short cells keep the column's average small.
    monkeypatch.setattr(_data, "MAX_CELL_BYTES", 4_000)
    ids = [str(i) for i in range(3000)]
    p = tmp_path / "dict.parquet"
    pq.write_table(pa.table({"id": ids, "input": ["s"] * 2999 + ["y" * 5000]}), p)
    with pytest.raises(InputError, match=r"dict.parquet:3000: field 'input': a cell larger than 4,000 bytes"):
        load_cases(p)
    monkeypatch.setattr(_data, "MAX_CELL_BYTES", 10_000)
    monkeypatch.setattr(_data, "MAX_TABLE_BYTES", 1_000_000)
    q = tmp_path / "many.parquet"
    pq.write_table(pa.table({"id": ids, "input": ["z" * 1000] * 3000}), q)
    assert q.stat().st_size < 50_000
    with pytest.raises(InputError, match=r"many.parquet: decodes to more than 1,000,000 bytes"):
        load_cases(q)


_LOAD_UNDER_A_CAP = """\
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))
from referee.cases._case import load_cases
from referee.errors import InputError
try:
    load_cases(sys.argv[1])
except InputError as exc:
    print("refused:", exc)
"""


@pytest.mark.slow
def test_a_300_mb_parquet_bomb_is_refused_under_a_memory_cap(tmp_path: Path) -> None:
    p = tmp_path / "bomb.parquet"
    make = ("import sys, pyarrow as pa, pyarrow.parquet as pq\n"
            "pq.write_table(pa.table({'id': ['a'], 'input': ['x' * (300 * 2**20)]}), sys.argv[1], "
            "compression='zstd', compression_level=19)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    subprocess.run([sys.executable, "-c", make, str(p)], check=True, timeout=120, env=env, start_new_session=True)
    assert p.stat().st_size < 100_000
    cap = 700 * 2**20  # referee and pyarrow fit; the decoded string (and its Python copy) do not
    proc = subprocess.run([sys.executable, "-c", _LOAD_UNDER_A_CAP.format(cap=cap), str(p)], capture_output=True,
                          text=True, timeout=120, env=env, start_new_session=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "refused:" in proc.stdout and "field 'input'" in proc.stdout and "larger than" in proc.stdout
