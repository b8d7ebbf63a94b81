"""Self-grading is flagged on the main path: every judging command records it, every report
shows it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.cli import cli
from referee.testing import FakeLLMServer
from tests.support.judging import KEY, judge_args, make_cases, read_rows, run, verdict

Cap = pytest.CaptureFixture[str]


@pytest.fixture(autouse=True)
def _openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def test_judge_flags_metadata_system_model_and_every_report_shows_it(tmp_path: Path, fake_server: FakeLLMServer,
                                                                      capsys: Cap) -> None:
    fake_server.responder = lambda req: verdict(0.9)
    cases = make_cases(3)
    cases[0]["metadata"] = {"system_model": "openai/judge-model"}  # the judge grading its own output
    cases[1]["metadata"] = {"system_model": "other-model"}
    code, _, err = run(judge_args(tmp_path, fake_server, cases=cases), capsys)
    assert code == 0, err
    assert "1 of 3 row(s) were graded by the model that produced them" in err
    rows = {r["id"]: r for r in read_rows(tmp_path / "results.jsonl")}
    assert rows["c0"]["flags"] == ["self_grading"] and "judge-model" in rows["c0"]["details"]["self_grading"]
    assert "self_grading" not in rows["c1"].get("flags", []) and "self_grading" not in rows["c2"].get("flags", [])
    m = json.loads((tmp_path / "results.manifest.json").read_text())
    assert m["system_under_test"] == "openai/judge-model, other-model"
    assert m["extra"]["self_grading_rows"] == 1

    # referee score: terminal, Markdown and JSON.
    res = str(tmp_path / "results.jsonl")
    code = cli(["score", res, "--json-out", str(tmp_path / "s.json"), "--markdown", str(tmp_path / "s.md")])
    out = capsys.readouterr().out
    assert code == 0
    assert "caveat: 1 of 3 rows were graded by the model that produced them (judge judge-model)" in out
    assert "Self-grading caveat" in (tmp_path / "s.md").read_text()
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["self_grading_rows"] == 1 and "self-grading inflates scores" in s["self_grading"]
    # referee report: the HTML report.
    assert cli(["report", res, "--html", str(tmp_path / "r.html")]) == 0
    assert 'id="self-grading"' in (tmp_path / "r.html").read_text()


def test_judge_system_model_flag(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap) -> None:
    fake_server.responder = lambda req: verdict(0.9)
    code, _, err = run(judge_args(tmp_path, fake_server, "--system-model", "Judge-Model"), capsys)
    assert code == 0, err
    assert all(r["flags"] == ["self_grading"] for r in read_rows(tmp_path / "results.jsonl"))
    assert json.loads((tmp_path / "results.manifest.json").read_text())["system_under_test"] == "Judge-Model"
    # A file whose manifest says the judge is the system under test is flagged by score even without row flags.
    rows = [{k: v for k, v in r.items() if k != "flags"} for r in read_rows(tmp_path / "results.jsonl")]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli(["score", str(tmp_path / "results.jsonl")]) == 0
    assert "the judge model (judge-model) is the system under test (Judge-Model)" in capsys.readouterr().out


def test_a_different_system_model_is_not_flagged(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap) -> None:
    fake_server.responder = lambda req: verdict(0.9)
    code, _, err = run(judge_args(tmp_path, fake_server, "--system-model", "gpt-4o-mini"), capsys)
    assert code == 0 and "self-grading" not in err
    assert not any("self_grading" in r.get("flags", []) for r in read_rows(tmp_path / "results.jsonl"))
    assert cli(["score", str(tmp_path / "results.jsonl")]) == 0
    assert "caveat" not in capsys.readouterr().out


def test_pairwise_flags_self_grading(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap) -> None:
    c = tmp_path / "pairs.jsonl"
    c.write_text(json.dumps({"id": "p1", "input": "2+2?", "output_a": "4", "output_b": "5",
                             "metadata": {"system_model_b": "judge-model"}}) + "\n")
    t = tmp_path / "t.md"
    t.write_text("Q: {input}\n<r1>{response_1}</r1>\n<r2>{response_2}</r2>\n")
    fake_server.responder = lambda req: json.dumps({"winner": "tie", "rationale": "same"})
    assert cli(["pairwise", str(c), "-t", str(t), "-o", str(tmp_path / "pw.jsonl"), "--provider", "openai",
                "--base-url", fake_server.openai_base_url, "--model", "judge-model"]) == 0
    assert "self-grading" in capsys.readouterr().err
    assert read_rows(tmp_path / "pw.jsonl")[0]["flags"] == ["self_grading"]


@pytest.mark.parametrize("command", [["judge"], ["pairwise"], ["evaluate"], ["gold"], ["trajectory"],
                                     ["conversation"], ["redteam", "run"], ["run"]])
def test_every_judging_command_takes_system_model(command: list[str], capsys: Cap) -> None:
    assert cli([*command, "--help"]) == 0
    assert "--system-model" in capsys.readouterr().out


def _every_command(tmp: Path, srv: FakeLLMServer) -> dict[str, list[str]]:
    """One run of every judging command against the fake server, judged by 'judge-1'."""
    from referee.example import DATA

    agent = DATA / "agent"
    judge = ["--provider", "openai", "--base-url", srv.openai_base_url, "--model", "judge-1"]
    support = tmp / "support.jsonl"
    support.write_text("".join(json.dumps({"id": f"s{i}", "input": "Refund?", "output": f"Refunds take {i} days."})
                               + "\n" for i in range(2)))
    pairs = tmp / "pairs.jsonl"
    pairs.write_text(json.dumps({"id": "p1", "input": "2+2?", "output_a": "4", "output_b": "5"}) + "\n")
    tmpl = tmp / "pw.md"
    tmpl.write_text("Q: {input}\n<r1>{response_1}</r1>\n<r2>{response_2}</r2>\n")
    jt = tmp / "judge.md"
    jt.write_text('Grade {output}. Reply {"quality": {"score": 0-1, "rationale": ""}, "overall_score": 0-1}\n')
    suite = tmp / "suite.yaml"
    suite.write_text(f"cases: {support.name}\njudge:\n  rubric: \"- accuracy: right\"\nevaluators:\n  - llm_judge\n")
    rt = tmp / "rt.jsonl"
    assert cli(["redteam", "generate", "--seed", "7", "--per-seed", "1", "--out", str(rt)]) == 0
    return {
        "judge": ["judge", str(support), "-t", str(jt), "-o", str(tmp / "judge.jsonl"), *judge],
        "pairwise": ["pairwise", str(pairs), "-t", str(tmpl), "-o", str(tmp / "pairwise.jsonl"), *judge],
        "evaluate": ["evaluate", "--cases", str(support), "--out", str(tmp / "evaluate.jsonl"), *judge],
        "trajectory": ["trajectory", str(agent / "trajectories.jsonl"), "--judge", "--out",
                       str(tmp / "trajectory.jsonl"), *judge],
        "conversation": ["conversation", str(agent / "conversations.jsonl"), "--out", str(tmp / "conversation.jsonl"),
                         *judge],
        "redteam": ["redteam", "run", str(rt), "--outputs", str(agent / "redteam_replies.jsonl"), "--judge",
                    "--out", str(tmp / "redteam.jsonl"), *judge],
        "run": ["run", str(suite), "--out", str(tmp / "run.jsonl"), "--no-gates", *judge],
    }


@pytest.mark.parametrize("name", ["judge", "pairwise", "evaluate", "trajectory", "conversation", "redteam", "run"])
def test_every_judging_command_records_and_flags_self_grading(name: str, tmp_path: Path, capsys: Cap) -> None:
    from referee.results import read_results
    from referee.results._manifest import RunManifest
    from referee.testing import schema_responder

    with FakeLLMServer(responder=schema_responder) as srv:
        args = _every_command(tmp_path, srv)[name]
        capsys.readouterr()
        cli([*args, "--system-model", "judge-1"])  # exit 0 or 1 (a gate): the rows are what matters
        err = capsys.readouterr().err
    out = Path(args[args.index("--out" if "--out" in args else "-o") + 1])
    m = RunManifest.read(out)
    assert m is not None and m.system_under_test == "judge-1"
    judged = [r for r in read_results(out).rows if r.judge is not None]
    assert judged and all("self_grading" in r.flags for r in judged), name
    assert "graded by the model that produced them" in err
