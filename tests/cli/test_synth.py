"""``referee synth`` on the command line: the stand-in without a key, the dry run, exit codes, usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import referee
from tests.support.cli import run_cli

DOCS = Path(__file__).resolve().parents[1] / "data" / "synth" / "docs"


def test_synth_with_the_standin_writes_a_case_file_referee_run_reads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cases.jsonl"
    code, stdout, err = run_cli(["synth", str(DOCS), "-o", str(out), "--n", "6", "--provider", "standin",
                                 "--persona", "new customer=2", "--persona", "support agent", "--json"], capsys)
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["kept"] == 6 and summary["requested"] == 6 and summary["shortfall"] is None
    assert "rejected by duplicate" in err and "per kind (kept / target)" in err
    assert max(len(line) for line in err.splitlines() if str(tmp_path) not in line and str(DOCS) not in line) <= 80
    cases = referee.load_cases(str(out)).cases
    assert len(cases) == 6 and all(c.metadata["synth"]["generator"]["provider"] == "standin" for c in cases)
    personas = [c.metadata["persona"] for c in cases]
    assert personas.count("new customer") == 4 and personas.count("support agent") == 2
    (tmp_path / "bot.py").write_text("def answer(case):\n    return case.get('contexts')[0]['text']\n")
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"cases: {out.name}\ntargets:\n  - id: bot\n    python: bot:answer\n"
                     "evaluators:\n  - token_f1: {threshold: 0.0}\n")
    code, _, err = run_cli(["run", str(suite), "--out", str(tmp_path / "res"), "--provider", "standin"], capsys)
    assert code == 0, err


def test_the_dry_run_sends_nothing_and_counts_what_is_cached(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["synth", str(DOCS), "-o", str(tmp_path / "c.jsonl"), "--n", "10", "--provider", "standin"]
    code, stdout, err = run_cli([*args, "--dry-run", "--json"], capsys)
    assert code == 0 and not (tmp_path / "c.jsonl").exists()
    est = json.loads(stdout)
    assert est["requests"] == 2 and est["cached"] == 0 and est["gate_calls"] >= 10 and est["cost_usd"] is None
    assert run_cli([*args, "--n", "5"], capsys)[0] == 0
    est = json.loads(run_cli([*args, "--dry-run", "--json"], capsys)[1])
    assert (est["requests"], est["cached"]) == (2, 1)


def test_a_shortfall_exits_1_and_keeps_the_cases(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = tmp_path / "tiny.md"
    doc.write_text("Refunds for unopened items are issued within 14 days of the return reaching us.\n")
    out = tmp_path / "c.jsonl"
    code, _, err = run_cli(["synth", str(doc), "-o", str(out), "--n", "10", "--provider", "standin",
                            "--kind", "single_hop", "--max-rounds", "2"], capsys)
    assert code == 1 and "shortfall: 1 of 10 cases kept" in err
    assert len(out.read_text().splitlines()) == 1


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = tmp_path / "d.md"
    doc.write_text("Refunds for unopened items are issued within 14 days of the return reaching us.\n")
    for extra, words in ((["--kind", "trivia=1"], "unknown kind"), (["--kind", "single_hop=x"], "NAME=WEIGHT"),
                         (["--redact", "nonsense"], "expected 'pii'"), (["-o", str(doc)], "destroy the input")):
        args = ["synth", str(doc), "-o", str(tmp_path / "c.jsonl"), "--provider", "standin", *extra]
        code, _, err = run_cli(args, capsys)
        assert code == 2 and words in err, (extra, err)
    assert doc.read_text().startswith("Refunds")
    code, _, err = run_cli(["synth", "-o", str(tmp_path / "c.jsonl"), "--provider", "standin"], capsys)
    assert code == 2 and "give DOCUMENTS" in err


def test_the_html_coverage_report_draws_the_summary_and_escapes_names(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "coverage.html"
    hostile = "<script>alert(1)</script>"
    code, stdout, err = run_cli(["synth", str(DOCS), "-o", str(tmp_path / "c.jsonl"), "--n", "5", "--provider",
                                 "standin", "--persona", hostile, "--html", str(page), "--json"], capsys)
    assert code == 0, err
    text = page.read_text()
    assert hostile not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert text.count("<svg") == 4 and "default-src 'none'" in text
    summary = json.loads(stdout)
    # One bar per kind, with its target tick, and the kept share the run reports.
    assert text.count('class="target"') == len(summary["kinds"])
    for kind, v in summary["kinds"].items():
        assert f"{kind}: {v['kept']:.0%}" in text
    code, _, err = run_cli(["synth", str(DOCS), "-o", str(tmp_path / "c.jsonl"), "--provider", "standin",
                            "--html", str(tmp_path / "c.jsonl")], capsys)
    assert code == 2 and "--html" in err


def test_store_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from referee.store import open_store

    history = tmp_path / "h.sqlite"
    args = ["synth", str(DOCS), "-o", str(tmp_path / "c.jsonl"), "--n", "3", "--provider", "standin",
            "--kind", "single_hop"]
    code, _, err = run_cli([*args, "--store", str(history)], capsys)
    assert code == 0 and "recorded in the run history" in err
    generation = err.split("as generation ", 1)[1].split()[0]
    with open_store(str(history)) as st:
        assert sum(g["gate"] == "kept" for g in st.generated_cases(generation)) == 3
    code, _, err = run_cli([*args, "--store", str(history), "--no-store"], capsys)
    assert code == 2 and "contradict" in err
