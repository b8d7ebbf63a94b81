"""Resuming a run: what it keeps is said in numbers, and --retry-unscored judges the unscored cases again,
asking the judge afresh rather than reading the cached reply they were unscored on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from referee.cli import cli
from referee.results._io import read_results

CASES = [{"id": f"c{i}", "output": f"Refunds take {i} days.", "reference": "5 days"} for i in range(4)]


def test_resume_counts_kept_rows_and_retry_unscored_asks_again(
        tmp_path: Path, fake_server: Any, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from referee.testing import schema_responder

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    broken = {"on": True}

    def responder(req: Any) -> str:  # c2's replies are not a verdict while "on": that case is unscored
        if broken["on"] and "Refunds take 2 days." in req.prompt_text:
            return "I cannot grade this."
        return schema_responder(req)

    fake_server.responder = responder
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    suite = tmp_path / "suite.yaml"
    suite.write_text("cases: cases.jsonl\nevaluators:\n  - llm_judge: '- accuracy: right'\n", encoding="utf-8")
    out = tmp_path / "r.jsonl"
    args = ["run", str(suite), "--out", str(out), "--provider", "openai", "--base-url", fake_server.url + "/v1",
            "--model", "m", "--no-gates"]
    assert cli(args) == 0
    rows = {r.id: r for r in read_results(out).rows}
    assert rows["c2"].status == "unscored" and rows["c1"].status == "scored"
    sent = len(fake_server.requests)
    capsys.readouterr()

    broken["on"] = False
    assert cli(args) == 0  # a plain resume keeps the unscored row and says so, with the flag that retries it
    err = capsys.readouterr().err
    assert "resuming: 4 rows already in" in err and "(3 scored, 1 unscored)" in err
    assert "0 error rows are judged again" in err and "--retry-unscored" in err
    assert len(fake_server.requests) == sent
    assert {r.id: r.status for r in read_results(out).rows}["c2"] == "unscored"

    assert cli([*args, "--retry-unscored"]) == 0
    err = capsys.readouterr().err
    assert "3 scored rows already in" in err and "1 unscored and 0 error rows are judged again" in err
    # The judge was asked again (the cache held the unparsable reply) and c2 is scored now, once in the file.
    assert len(fake_server.requests) == sent + 1
    rows_after = read_results(out).rows
    assert [r.id for r in rows_after].count("c2") == 1
    assert {r.id: r.status for r in rows_after} == dict.fromkeys(["c0", "c1", "c2", "c3"], "scored")


def test_a_targets_rerun_says_its_judge_calls_came_from_the_cache(
        tmp_path: Path, fake_server: Any, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from referee.testing import schema_responder

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fake_server.responder = schema_responder
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({k: v for k, v in c.items() if k != "output"}) + "\n"
                                                  for c in CASES), encoding="utf-8")
    (tmp_path / "fh_session_bot.py").write_text("def answer(case):\n    return 'Refunds take 5 days.'\n", encoding="utf-8")
    suite = tmp_path / "suite.yaml"
    suite.write_text("cases: cases.jsonl\ntargets:\n  - id: echo\n    python: fh_session_bot:answer\n"
                     "evaluators:\n  - llm_judge: '- accuracy: right'\n", encoding="utf-8")
    base = ["run", str(suite), "--provider", "openai", "--base-url", fake_server.url + "/v1", "--model", "m",
            "--no-gates"]
    assert cli([*base, "--out", str(tmp_path / "one")]) == 0
    first = capsys.readouterr().err
    assert cli([*base, "--out", str(tmp_path / "two")]) == 0  # a fresh folder: the same calls, from the cache
    second = capsys.readouterr().err
    assert "from cache" in first and "from cache" in second
    line = next(x for x in second.splitlines() if x.startswith("echo: generated"))
    assert "(0 judge calls, 4 from cache)" in line


def test_referee_judge_retries_unscored_too(tmp_path: Path, fake_server: Any, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    from referee.testing import schema_responder

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    broken = {"on": True}

    def responder(req: Any) -> str:
        if broken["on"] and "Refunds take 1 days." in req.prompt_text:
            return "no verdict here"
        return schema_responder(req)

    fake_server.responder = responder
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    (tmp_path / "t.md").write_text("Grade {output} against {reference}.", encoding="utf-8")
    out = tmp_path / "r.jsonl"
    args = ["judge", str(cases), "--template", str(tmp_path / "t.md"), "--out", str(out), "--provider", "openai",
            "--base-url", fake_server.url + "/v1", "--model", "m"]
    cli(args)
    assert {r.id: r.status for r in read_results(out).rows}["c1"] == "unscored"
    broken["on"] = False
    cli([*args, "--retry-unscored"])
    assert "1 unscored and 0 error rows are judged again" in capsys.readouterr().err
    assert {r.id: r.status for r in read_results(out).rows}["c1"] == "scored"
