"""docs/agents.md, its tool-call section end to end: the suite excerpt runs as a suite on cases whose calls are
right (in any order), wrong in a value, short of a required argument, or not JSON, with the reasons the page
quotes; the Python example gives the result its comment states."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from referee.cli import cli
from referee.results import read_results
from tests.docs.pages import blocks

DOC = Path(__file__).resolve().parents[2] / "docs" / "agents.md"


def _section(title: str, lang: str) -> list[str]:
    """The ``lang`` blocks under the section ``## title``, as the doc tests parse them (tests/docs/pages.py)."""
    lines = DOC.read_text(encoding="utf-8").split("\n")
    start = next(i for i, x in enumerate(lines) if x.startswith("## " + title)) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines)) + 1
    return [b.source for b in blocks(DOC) if b.lang == lang and start < b.line < end]


def _block(lang: str) -> str:
    found = _section("Tool calls, as the function-calling leaderboard", lang)
    assert found, lang
    return found[0]


def test_the_python_example_gives_what_its_comment_says() -> None:
    code = _block("python")
    stated = code.rsplit("#", 1)[1].strip()
    ns: dict[str, Any] = {}
    exec(compile(code, "docs/agents.md", "exec"), ns)  # noqa: S102 - our own docs
    r = ns["r"]
    assert repr((r.passed, r.score, r.reason)) == stated


def _call(city: str, **args: Any) -> dict[str, Any]:
    return {"name": "get_weather", "arguments": json.dumps({"city": city, **args})}


def test_the_suite_excerpt_grades_calls_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = [
        {"id": "reversed", "calls": [_call("Rome", unit="celsius"), _call("paris, france")]},
        {"id": "kelvin", "calls": [_call("Paris", unit="kelvin"), _call("Rome")]},
        {"id": "missing", "calls": [{"name": "get_weather", "arguments": {"unit": "celsius"}}, _call("Rome")]},
        {"id": "not-json", "calls": [{"name": "get_weather", "arguments": "{city: Paris"}, _call("Rome")]},
        {"id": "one-call", "calls": [_call("Paris")]},
    ]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (tmp_path / "suite.yaml").write_text("name: weather\ncases: cases.jsonl\n" + _block("yaml"))
    assert cli(["validate", str(tmp_path / "suite.yaml")]) == 0
    out = tmp_path / "r.jsonl"
    assert cli(["run", str(tmp_path / "suite.yaml"), "--out", str(out)]) == 0
    rows = {r.id: r for r in read_results(out).rows}
    assert rows["reversed"].score == 1.0 and rows["reversed"].passed
    assert all(rows[i].score == 0.0 for i in ("kelvin", "missing", "not-json", "one-call"))
    assert "argument 'unit': 'kelvin' is not one of" in (rows["kelvin"].rationale or "")
    assert "missing required argument 'city'" in (rows["missing"].rationale or "")
    assert "arguments are not JSON" in (rows["not-json"].rationale or "")
    capsys.readouterr()


def _both(lang: str) -> list[str]:
    return _section("A screenshot and exact tool calls, end to end", lang)


def _example(tmp_path: Path, pixel: tuple[int, int, tuple[int, int, int]] | None = None) -> None:
    from tests.support.images import png

    (tmp_path / "shots").mkdir(exist_ok=True)
    (tmp_path / "shots" / "form.png").write_bytes(png(6, 4, pixel=pixel))
    case = json.loads(_both("json")[0])
    (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n")
    (tmp_path / "agent.yaml").write_text(_both("yaml")[0])


def test_the_screenshot_and_tool_calls_example_runs_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from referee.testing import FakeLLMServer, schema_responder
    from tests.support.images import png

    _example(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    run_line = _both("bash")[0].splitlines()[1].split()  # after the line starting the stand-in server
    assert run_line[:2] == ["referee", "run"]
    with FakeLLMServer(responder=schema_responder) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        args = run_line[1:]
        args[args.index("--base-url") + 1] = srv.openai_base_url  # this test's server, not the page's
        code = cli(args)
        err = capsys.readouterr().err
        assert code in (0, 1), err
        (req,) = srv.requests  # one judge call; tool_calls needs none
        assert req.body["model"] == "gpt-4o"
        assert [i["bytes"] for i in req.images] == [png(6, 4)]  # the screenshot itself, well formed on the wire
        content = req.body["messages"][1]["content"]
        kinds = [p["type"] for p in content]
        assert "image_url" in kinds and content[kinds.index("image_url") - 1]["text"].splitlines()[-1].startswith(
            '2. screenshot({"region": "form"}) ->')  # the image sits where step 2's result is listed
    (row,) = read_results(tmp_path / "results.jsonl").rows
    crit = {c.id: c for c in row.criteria}
    assert crit["calls"].score == 1.0 and crit["path"].status == "scored"
    assert "shots/form.png (png 6x4, sha256 " in (tmp_path / "comment.md").read_text()
    report_line = _both("bash")[0].splitlines()[2].split()
    assert report_line[:2] == ["referee", "report"] and cli(report_line[1:]) == 0
    html = (tmp_path / "report.html").read_text()
    assert "data:image/png;base64," + base64.b64encode(png(6, 4)).decode() in html


def test_the_example_with_a_wrong_call_names_it_and_a_text_only_judge_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from referee.testing import FakeLLMServer, schema_responder

    _example(tmp_path)
    case = json.loads((tmp_path / "cases.jsonl").read_text())
    case["trajectory"][0]["args"] = {"url": "/profile"}
    (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    with FakeLLMServer(responder=schema_responder) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        cli(["run", "agent.yaml", "--out", "r.jsonl", "--no-gates"])
        (row,) = read_results(tmp_path / "r.jsonl").rows
        crit = {c.id: c for c in row.criteria}
        assert crit["calls"].score == 0.0
        assert "open_page" in (crit["calls"].rationale or "") and "'url'" in (crit["calls"].rationale or "")
        (tmp_path / "agent.yaml").write_text(_both("yaml")[0].replace("model: gpt-4o", "model: gpt-3.5-turbo"))
        before = len(srv.requests)
        assert cli(["run", "agent.yaml", "--out", "r2.jsonl", "--no-gates"]) == 2
        assert len(srv.requests) == before  # refused before any call
    assert "gpt-3.5-turbo" in capsys.readouterr().err
