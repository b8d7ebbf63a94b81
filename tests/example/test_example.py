"""The README's first command: the built-in example runs end to end, with and without a judge."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from referee.cli import cli
from referee.results import read_results
from referee.store import open_store
from referee.testing import FakeLLMServer, schema_responder
from referee.view import build_app


def test_example_without_a_judge_skips_only_model_graded_steps(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    # --no-standin: no judge at all (by default the stand-in judge grades, tests/example/test_standin_steps.py).
    code = cli(["example", "--dir", str(tmp_path / "ex"), "--no-standin"])
    out = capsys.readouterr()
    assert code == 0, out.err
    text = out.out + out.err
    assert "no judge is configured" in text
    assert "ANTHROPIC_API_KEY" in text and "REFEREE_BASE_URL" in text
    assert not (tmp_path / "ex" / "judged_after.jsonl").exists()
    assert (tmp_path / "ex" / "before.jsonl").exists()
    # It ends with the command that opens its runs in the viewer, and that command works on them.
    last = out.out.strip().splitlines()[-1].split()
    assert last[:2] == ["referee", "view"] and last[-1] == "--open"
    files = last[2:-1]
    assert [Path(f).name for f in files[:2]] == ["suite_before.jsonl", "suite_after.jsonl"]
    app = build_app(files, lock=False)
    suite_after = app.runs["1"]
    assert len(suite_after.table) == 12
    assert suite_after.index().cases["refund-01"].output  # the cases file found through the run manifest


def test_example_with_a_local_judge_grades_every_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    with FakeLLMServer(responder=schema_responder) as srv:
        monkeypatch.setenv("REFEREE_PROVIDER", "openai")
        monkeypatch.setenv("REFEREE_BASE_URL", srv.openai_base_url)
        code = cli(["example", "--dir", str(tmp_path / "ex")])
        out = capsys.readouterr()
        assert code == 0, out.err
        assert srv.requests, "the judge was never called"
    rows = read_results(tmp_path / "ex" / "judged_after.jsonl").rows
    assert len(rows) == 12
    assert all(r.status == "scored" and r.score is not None for r in rows)
    assert "no judge is configured" not in out.out + out.err


def test_example_in_a_relative_folder_as_scripts_example_runs_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("REFEREE_STORE")  # as a user has it: the run history on
    code = cli(["example", "--dir", "rel-example"])
    out = capsys.readouterr()
    assert code == 0, out.err[-2000:]
    assert (tmp_path / "rel-example" / "targets_out" / "v2.jsonl").exists()
    assert out.out.strip().splitlines()[-1].strip().startswith("referee view rel-example/")
    # The main viewer holds runs over the same cases (a grid with a verdict in every cell); runs over cases of
    # their own each get a viewer of their own, listed before it.
    main = shlex.split(out.out.strip().splitlines()[-1])[2:-1]
    ids = [{json.loads(x)["id"] for x in (tmp_path / f).read_text(encoding="utf-8").splitlines()} for f in main]
    assert len(main) >= 2 and all(i == ids[0] for i in ids[1:]), main
    others = out.out.split("Runs of other cases, each in a viewer of its own:")[1].split("Look at the runs")[0]
    for f in ("rag_results.jsonl", "agent_checks.jsonl", "simulated_results.jsonl", "targets_out"):
        assert f"referee view rel-example/{f} --open" in others, f
    # It ends with two stored runs of its suite and their trend, in a history of its own (never the working
    # folder's or a repository's .referee/).
    assert not (tmp_path / ".referee" / "history.sqlite").exists()
    with open_store(str(tmp_path / "rel-example" / "history.sqlite")) as st:
        suite_runs = st.list_runs(suite="support-agent", status="complete")
    assert len(suite_runs) == 2
    by_file = {Path(str(r.results_path)).name: r for r in suite_runs}
    assert set(by_file) == {"suite_before.jsonl", "suite_after.jsonl"}
    for name, r in by_file.items():
        assert r.n_rows == len(read_results(tmp_path / "rel-example" / name).rows) and r.pass_rate is not None
    assert "referee runs trend --store rel-example/history.sqlite --suite support-agent" in out.out
    assert "pass_rate of support-agent" in out.out
    assert "referee view --store rel-example/history.sqlite --open" in out.out
