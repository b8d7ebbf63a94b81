"""Resource bombs are refused with a one-line error (or an error/unscored row), within
bounded time and memory, and the run goes on.

Time is not asserted as speed. ``finishes`` runs each input in a worker thread and fails if it has not
finished after a generous limit (the inputs took 32 s of CPU to minutes and gigabytes before the fix); work
that holds the GIL cannot be interrupted, so the limit is checked when it returns.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from referee._util._data import UnsafeData
from referee._util._data import loads as safe_loads
from referee.cases._case import load_cases
from referee.cli import cli
from referee.errors import InputError
from referee.evaluators._reply import ReplyInvalid, parse_json_object
from referee.evaluators.checks._text import Regex
from referee.results import ResultRow, ResultWriter, read_results

BOMB = ("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
        + "".join(f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)))


def finishes(fn: Callable[[], Any], limit: float = 60.0) -> Any:
    """Run ``fn`` in a thread; fail if it does not finish (a hang), re-raise what it raised."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(limit)
    assert not t.is_alive(), "did not finish: unbounded work on hostile input"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def test_the_bomb_is_small() -> None:
    assert len(BOMB) < 500  # 9**9 = 387 million strings once expanded


@pytest.mark.parametrize("where", ["case metadata", "suite", "option file"])
def test_a_yaml_alias_bomb_is_refused_everywhere(where: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    indented = "".join("    " + ln + "\n" for ln in BOMB.splitlines())
    if where == "case metadata":
        f = tmp_path / "cases.yaml"
        f.write_text(f"- id: c1\n  output: hi\n  metadata:\n{indented.replace('    ', '    ', 1)}")
        args = ["judge", str(f), "-t", str(tmp_path / "t.md"), "-o", str(tmp_path / "r.jsonl")]
        (tmp_path / "t.md").write_text("<output>{output}</output>")
    elif where == "suite":
        f = tmp_path / "s.yaml"
        f.write_text("name: s\ncases: c.jsonl\nevaluators:\n  - contains: {value: x}\nbomb:\n" + indented)
        (tmp_path / "c.jsonl").write_text('{"id": "c1", "output": "x"}\n')
        args = ["validate", str(f)]
    else:
        f = tmp_path / "opts.yaml"
        f.write_text(BOMB)
        (tmp_path / "c.jsonl").write_text('{"id": "c1", "output": "x", "trajectory": []}\n')
        args = ["trajectory", str(tmp_path / "c.jsonl"), "--checks", str(f), "-o", str(tmp_path / "r.jsonl")]
    code = finishes(lambda: cli(args))
    err = capsys.readouterr().err
    assert code == 2, err
    assert "alias" in err and str(f.name) in err


@pytest.mark.parametrize(("text", "why"), [
    ("[" * 100_000 + "]" * 100_000, "nested deeper"),
    ('{"id": "c1", "n": ' + "9" * 5000 + "}", "4,300 digits"),
    ('{"id": "\\ud800", "output": "x"}', "lone surrogate"),
])
def test_hostile_json_is_a_one_line_error_naming_file_and_line(text: str, why: str, tmp_path: Path) -> None:
    f = tmp_path / "cases.jsonl"
    f.write_text('{"id": "ok", "output": "x"}\n' + text + "\n")
    with pytest.raises(InputError, match=why) as exc:
        finishes(lambda: load_cases(f))
    assert exc.value.line == 2 and "cases.jsonl" in str(exc.value) and "\n" not in str(exc.value)
    with pytest.raises(UnsafeData):
        safe_loads(text)


def test_a_lone_surrogate_from_a_reply_is_written_not_a_crash(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    with ResultWriter(out) as w:
        w.write(ResultRow(id="c1", status="unscored", raw_reply="bad \ud800 text"))
        w.write(ResultRow(id="c2", status="scored", score=1.0))
    rows = read_results(out, strict=True).rows
    assert [r.id for r in rows] == ["c1", "c2"] and rows[0].raw_reply == "bad \ufffd text"


@pytest.mark.parametrize("reply", ["{" * 30_000, "{" * 30_000 + '{"overall_score": 0.5}', "[" * 100_000,
                                   '{"a": ' * 50_000 + "1" + "}" * 50_000, '{"overall_score": ' + "9" * 6000 + "}",
                                   "```json\n" + " " * 200_000 + "x"])
def test_hostile_replies_are_invalid_quickly(reply: str) -> None:
    def parse() -> Any:
        try:
            return parse_json_object(reply)
        except ReplyInvalid as exc:
            return exc
    result = finishes(parse, limit=20)
    if reply.endswith('{"overall_score": 0.5}'):
        assert result == {"overall_score": 0.5}  # the complete object inside the open braces is still found
    else:
        assert isinstance(result, ReplyInvalid) and "\n" not in str(result)


def test_a_regex_check_on_a_huge_output_is_bounded() -> None:
    check = Regex(pattern="(x+x+)+y")
    result = finishes(lambda: check.evaluate(None, "x" * 1000))  # type: ignore[arg-type]
    assert result.status == "error" and "took more than" in result.reason and result.score is None


def test_a_regex_check_still_matches() -> None:
    assert Regex(pattern=r"\d+").evaluate(None, "a 42").passed is True  # type: ignore[arg-type]
    assert Regex(pattern=r"^\d+$", full_match=True).evaluate(None, "a 42").passed is False  # type: ignore[arg-type]


def test_a_suite_run_with_a_hostile_case_goes_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "big", "output": "x" * 1000}) + "\n"
                                      + json.dumps({"id": "ok", "output": "42"}) + "\n")
    (tmp_path / "s.yaml").write_text("name: s\ncases: c.jsonl\nevaluators:\n  - regex: {pattern: '(x+x+)+y|42'}\n")
    finishes(lambda: cli(["run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "r.jsonl")]))
    capsys.readouterr()
    rows = {r.id: r for r in read_results(tmp_path / "r.jsonl").rows}
    assert rows["ok"].status == "scored" and rows["ok"].score == 1.0
    assert rows["big"].status == "error"


def _refused(thunk: Callable[[], object]) -> bool:
    try:
        thunk()
    except UnsafeData:
        return True
    return False


def test_the_plain_text_shortcut_refuses_exactly_what_the_full_walk_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    """referee._util._data.loads skips the walk over parsed values when the text alone shows there is nothing to refuse
    (a 10,000-case file: most of its reading time); every hostile form still takes the walk."""
    from referee._util import _data

    deep = 128
    samples: list[str | bytes] = [
        '{"id": "a", "input": "plain"}', '{"id": "é", "input": "caf\\u00e9 \\ud83d\\ude00"}',
        '{"x": "\\ud800"}', '{"x": "\\uDFFF"}', '["\\\\ud800"]', "[" * deep + "]" * deep,
        "[" * (deep + 1) + "]" * (deep + 1), '{"x": "' + "[" * 200 + '"}',
    ]
    samples += [s.encode("utf-8") for s in samples if isinstance(s, str)]
    samples += ['{"x": "\ud800"}', '{"x": "\ud800"}'.encode("utf-8", "surrogatepass"),
                '{"x": "\\ud800"}'.encode("utf-16"), '{"x": "\ud800"}'.encode("utf-16", "surrogatepass")]
    for text in samples:
        want = _refused(lambda t=text: _data.check_data(json.loads(t)))  # type: ignore[misc]
        assert _refused(lambda t=text: safe_loads(t)) == want, text  # type: ignore[misc]
    assert _refused(lambda: safe_loads('{"x": "\\ud800"}'))  # the loop above saw refusals
    walked: list[object] = []

    def recorded(v: object) -> object:
        walked.append(v)
        return v

    monkeypatch.setattr(_data, "check_data", recorded)
    assert _data.loads('{"id": "a", "input": "plain"}') == {"id": "a", "input": "plain"} and walked == []
