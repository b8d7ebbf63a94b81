"""``referee monitor``: the example's recorded production traces evaluated with the stand-in judge (no key),
the low-scored traces written as cases, and the monitor file's errors named."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from referee.example import DATA
from tests.support.cli import run_cli

RECORDED = DATA / "production" / "traces.otlp.jsonl"
SUITE = DATA / "production" / "monitor.yaml"


def test_replayed_traces_are_scored_and_the_worst_become_cases(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "low.jsonl"
    code, stdout, err = run_cli(["monitor", str(SUITE), "--replay", str(RECORDED), "--once", "--provider",
                                 "standin", "--to-cases", str(out), "--below", "0.5"], capsys)
    assert code == 0, err
    lines = {line.split()[0]: line.split() for line in stdout.splitlines() if line.split()}
    assert lines["faithfulness"][1] == "12" and lines["llm_judge"][1] == "12"
    cases = [json.loads(line) for line in out.read_text().splitlines()]
    assert cases and all(c["metadata"]["production_scores"]["faithfulness"] < 0.5 for c in cases
                         if "faithfulness" in c["metadata"]["production_scores"])
    # The made-up answers (backups kept forever, refunds at any time) are among them; the good ones are not.
    outputs = " ".join(c["output"] for c in cases)
    assert "kept forever" in outputs and "within 30 days of purchase" not in outputs
    assert all(c["contexts"] for c in cases)
    assert "sk-live" not in out.read_text()
    # No trace under 0: nothing is written, and the cases selected above stay (an empty file replaced them).
    before = out.read_bytes()
    code, _, err = run_cli(["monitor", str(SUITE), "--replay", str(RECORDED), "--once", "--provider", "standin",
                            "--to-cases", str(out), "--below", "0"], capsys)
    assert code == 0 and f"no trace matched: {out} not written" in err and out.read_bytes() == before


def test_once_with_a_judge_that_is_down_stops_after_one_pass_and_says_why(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    # Port 9 (discard) has no server here: every call fails to connect. Another pass would fail the same way, so
    # --once stops (it passed forever before), and the traces stay unscored for the next run.
    code, stdout, err = run_cli(["monitor", str(SUITE), "--replay", str(RECORDED), "--once", "--provider", "openai",
                                 "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--max-retries", "0"], capsys)
    assert code == 1, err
    assert "the judge is unavailable" in err and "cannot connect" in err and "nothing was scored" in err
    assert "skipped: judge_unavailable" in stdout
    assert "sk-test" not in stdout + err


def test_the_secret_in_a_span_attribute_never_reaches_the_output(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert "sk-live-abcdef0123456789" in RECORDED.read_text()  # the recording has one
    code, stdout, err = run_cli(["monitor", str(SUITE), "--replay", str(RECORDED), "--once", "--provider",
                                 "standin"], capsys)
    assert code == 0 and "sk-live" not in stdout + err


def test_a_monitor_file_without_a_monitor_section_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "suite.yaml"
    bad.write_text("evaluators: [faithfulness]\n")
    code, _, err = run_cli(["monitor", str(bad), "--replay", str(RECORDED), "--once", "--provider", "standin"],
                           capsys)
    assert code == 2 and "suite.yaml" in err and "monitor:" in err


def test_an_unknown_monitor_key_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "suite.yaml"
    bad.write_text("evaluators: [faithfulness]\nmonitor:\n  sampling: {rate: 0.5, cap: 3}\n")
    code, _, err = run_cli(["monitor", str(bad), "--replay", str(RECORDED), "--once", "--provider", "standin"],
                           capsys)
    assert code == 2 and "cap" in err and "per_minute" in err


def test_a_recording_that_is_not_otlp_names_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec = tmp_path / "rec.jsonl"
    rec.write_text(RECORDED.read_text().splitlines()[0] + "\n{broken\n")
    code, _, err = run_cli(["monitor", str(SUITE), "--replay", str(rec), "--once", "--provider", "standin"], capsys)
    assert code == 2 and "rec.jsonl:2" in err and "malformed JSON" in err


def test_collect_refuses_another_address_without_the_flag_and_a_token(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["collect", "--host", "0.0.0.0", "--port", "0"], capsys)
    assert code == 2 and "--allow-remote" in err
    code, _, err = run_cli(["collect", "--host", "0.0.0.0", "--port", "0", "--allow-remote"], capsys)
    assert code == 2 and "--token" in err


@pytest.mark.slow
def test_collect_ends_with_its_counts_in_words(tmp_path: Path) -> None:
    """Ctrl-C ends `referee collect` with its counts: refused requests by reason, never a Python dict."""
    env = {**os.environ, "REFEREE_COLLECT_TOKEN": "t" * 32}
    proc = subprocess.Popen([sys.executable, "-m", "referee", "collect", "--port", "0", "--store",
                             f"sqlite:///{tmp_path / 'h.sqlite'}"], env=env, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()
        port = int(re.search(r"127\.0\.0\.1:(\d+)/v1/traces", first).group(1))  # type: ignore[union-attr]
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("POST", "/v1/traces", body=b"{}", headers={"Content-Type": "application/json",
                                                                 "Authorization": "Bearer wrong"})
        assert conn.getresponse().status == 401
        conn.close()
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(60)
    assert proc.returncode == 0, err
    assert "1 request(s), 0 span(s) received, 0 stored, 0 duplicate(s); refused: 1 (unauthorized 1); busy " \
           "replies: 0" in err, err
    assert "{" not in err and "t" * 32 not in err


def test_the_summary_table_cuts_a_long_metric_name_by_columns_and_says_so(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    # A metric's id was cut at 24 characters without a mark (two long ids read the same), and by characters: a
    # Japanese id took twice its share.
    from rich.cells import cell_len

    suite = tmp_path / "m.yaml"
    suite.write_text(SUITE.read_text(encoding="utf-8").replace(
        "  - faithfulness ", "  - id: 忠実性_回答と検索文書の一致\n    faithfulness: {}\n  #", 1), encoding="utf-8")
    code, out, err = run_cli(["monitor", str(suite), "--replay", str(RECORDED), "--once", "--provider", "standin",
                              "--store", f"sqlite:///{tmp_path / 'h.sqlite'}"], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1].startswith("忠実性_回答と検索文書の~ ") and len({cell_len(line) for line in lines[:3]}) == 1


def test_the_counts_under_the_summary_fit_the_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # Every reason a trace was not evaluated went on one line: four of them took it to 98 columns.
    from rich.cells import cell_len

    monkeypatch.setenv("COLUMNS", "80")
    suite = tmp_path / "m.yaml"
    suite.write_text("name: x\nevaluators:\n  - faithfulness\n  - llm_judge: {rubric: '- ok'}\nmonitor:\n"
                     "  sampling: {rate: 0.5, per_minute: 3}\n  traces: [{service: acme-support}]\n"
                     "  max_input_chars: 300\n", encoding="utf-8")
    extra = tmp_path / "other.jsonl"  # a trace of another service: not_matched
    line = RECORDED.read_text(encoding="utf-8").splitlines()[0]
    trace_id = json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    extra.write_text(line.replace('"acme-support"', '"other"').replace(trace_id, "ab" * 16), encoding="utf-8")
    code, out, err = run_cli(["monitor", str(suite), "--replay", str(RECORDED), "--replay", str(extra), "--once",
                              "--provider", "standin", "--store", f"sqlite:///{tmp_path / 'h.sqlite'}"], capsys)
    assert code == 1, err  # nothing scored: every trace is skipped for one reason or another
    assert max(cell_len(line) for line in out.splitlines()) <= 80, out
    counts = out[out.index("counts: "):].replace("\n ", " ")
    for reason in ("not_matched", "over_cap", "sampled_out", "too_large"):
        assert f"skipped: {reason} " in counts, out


def test_a_store_keeps_the_scores_and_traces_to_cases_reads_them(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    args = ["monitor", str(SUITE), "--replay", str(RECORDED), "--once", "--provider", "standin", "--store", url]
    code, first, err = run_cli(args, capsys)
    assert code == 0, err
    code, again, _ = run_cli(args, capsys)  # a rerun finds every trace scored: nothing judged twice
    assert code == 0 and again.splitlines()[:3] == first.splitlines()[:3]
    out = tmp_path / "failed.jsonl"
    code, _, err = run_cli(["traces", "to-cases", "--store", url, "--metric", "faithfulness", "--failed",
                            "--out", str(out)], capsys)
    assert code == 0, err
    cases = [json.loads(line) for line in out.read_text().splitlines()]
    assert cases and all(c["metadata"]["production_scores"]["faithfulness"] < 0.7 for c in cases)
    code, _, err = run_cli(["traces", "to-cases", "--store", url, "--out", str(out)], capsys)
    assert code == 2 and "--below" in err and "--errors" in err
    # Nothing matched: the earlier selection in that file is kept (it was replaced by an empty file).
    before = out.read_bytes()
    code, _, err = run_cli(["traces", "to-cases", "--store", url, "--trace", "ab" * 16, "--out", str(out)], capsys)
    assert code == 1 and "not written" in err and out.read_bytes() == before
    code, _, err = run_cli(["traces", "to-cases", "--store", url, "--trace", "zz", "--out", str(out)], capsys)
    assert code == 2 and "32 hexadecimal digits" in err
    # A misspelt metric is named as such (it was "nothing matched", exit 1), and the file is kept.
    code, _, err = run_cli(["traces", "to-cases", "--store", url, "--metric", "faithfulnes", "--failed", "--out",
                            str(out)], capsys)
    assert code == 2 and "metric 'faithfulnes': no stored score (did you mean 'faithfulness'?)" in err
    assert "(stored: faithfulness, llm_judge)" in err and out.read_bytes() == before
    # Reading stored traces never makes a store where there is none (nor reads a store turned off as empty).
    missing = tmp_path / "none" / "history.sqlite"
    code, _, err = run_cli(["traces", "to-cases", "--store", f"sqlite:///{missing}", "--errors", "--out",
                            str(tmp_path / "x.jsonl")], capsys)
    assert code == 2 and "no run history at" in err and not missing.parent.exists()


def _failed_in_recording() -> set[str]:
    """The trace ids the recording itself marks with a span of status ERROR (read from the file, not the store)."""
    failed = set()
    for line in RECORDED.read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                failed |= {sp["traceId"] for sp in ss["spans"]
                           if (sp.get("status") or {}).get("code") in (2, "STATUS_CODE_ERROR")}
    return failed


def test_traces_to_cases_selects_the_traces_with_an_error_span(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    code, _, err = run_cli(["monitor", str(SUITE), "--replay", str(RECORDED), "--once", "--provider", "standin",
                            "--store", url], capsys)
    assert code == 0, err
    failed = _failed_in_recording()
    assert len(failed) == 1  # the example's one failed request
    out = tmp_path / "errors.jsonl"
    code, _, err = run_cli(["traces", "to-cases", "--store", url, "--errors", "--out", str(out)], capsys)
    assert code == 0, err
    assert "1 trace(s) ->" in err
    assert {json.loads(line)["metadata"]["trace_id"] for line in out.read_text().splitlines()} == failed


def test_the_same_suite_runs_offline_with_its_monitor_section(tmp_path: Path) -> None:
    from referee.suites import load_suite

    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.read_text() + "cases:\n  - {id: a, input: q, output: a, contexts: [a]}\n")
    loaded = load_suite(suite)
    assert [c.id for c in loaded.cases] == ["a"]


def test_sampling_at_ingest_stores_only_the_sampled_traces(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from referee.store import TraceStore, open_store
    from referee.traces import trace_fraction

    suite = tmp_path / "monitor.yaml"
    suite.write_text(SUITE.read_text().replace("    always:\n      - status: error       # and always the traces "
                                               "that failed\n", "    at_ingest: true\n").replace("rate: 1.0", "rate: 0.5"))
    assert "at_ingest" in suite.read_text() and "always" not in suite.read_text()
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    code, stdout, err = run_cli(["monitor", str(suite), "--replay", str(RECORDED), "--once", "--provider", "standin",
                                 "--store", url], capsys)
    assert code == 0, err
    every = {sp["traceId"] for line in RECORDED.read_text().splitlines() if line.strip()
             for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for sp in ss["spans"]}
    want = {t for t in every if trace_fraction(t) < 0.5}
    with open_store(url) as st:
        stored = {t.id for t in TraceStore(st).list_traces(limit=100)}
    assert stored == want and 0 < len(want) < len(every)
    assert f"not stored: sampled_out (traces) {len(every) - len(want)}" in stdout


def test_collect_refuses_a_sample_rate_outside_0_to_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["collect", "--port", "0", "--sample-rate", "1.5"], capsys)
    assert code == 2 and "--sample-rate" in err


def test_the_summary_shows_the_suites_offline_run_beside_production(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from referee.store import open_store

    suite = tmp_path / "monitor.yaml"
    suite.write_text(SUITE.read_text() + "cases:\n"
                     "  - {id: a, input: 'How long are backups kept?', output: 'Thirty days.', contexts: ['Backups "
                     "are kept for thirty days.']}\n"
                     "  - {id: b, input: 'Refunds?', output: 'At any time, forever.', contexts: ['Refunds within 30 "
                     "days.']}\n")
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    code, _, err = run_cli(["run", str(suite), "--provider", "standin", "--store", url, "--no-gates",
                            "-o", str(tmp_path / "offline.jsonl")], capsys)
    assert code == 0, err
    with open_store(url) as st:
        [run] = st.list_runs(suite="acme-support-production")
        rows = st.rows(run.id)
    want = {m: sum(r.checks[m].score for r in rows) / len(rows) for m in ("faithfulness", "llm_judge")}  # type: ignore[misc]
    code, stdout, err = run_cli(["monitor", str(suite), "--replay", str(RECORDED), "--once", "--provider", "standin",
                                 "--store", url], capsys)
    assert code == 0, err
    notes = {line.split(":")[0]: line for line in stdout.splitlines() if "offline run" in line}
    assert set(notes) == {"faithfulness", "llm_judge"}
    for metric, line in notes.items():
        assert f"offline run {run.id[:12]}" in line and f": {want[metric]:.3f} [" in line and "over 2 case(s)" in line
        assert "for context, not the reference" in line
    # Without a stored run of the suite, nothing is said.
    code, stdout, _ = run_cli(["monitor", str(SUITE), "--replay", str(RECORDED), "--once", "--provider", "standin",
                               "--store", f"sqlite:///{tmp_path / 'empty.sqlite'}"], capsys)
    assert code == 0 and "offline run" not in stdout


def test_traces_to_cases_says_when_the_store_holds_no_traces_or_no_scores(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # "No stored trace matched" hid the usual mistake: the collector wrote to another store, or nothing has
    # scored the traces yet. Each is said, and nothing is written.
    import time

    import referee
    from referee.store import open_store
    from referee.traces import StoreSink, load_monitor, replay

    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    out = tmp_path / "low.jsonl"
    referee.evaluate([{"output": "yes"}], [{"contains": {"value": "yes"}}], store=url, progress=False)  # a run
    code, _, err = run_cli(["traces", "to-cases", "--store", url, "--below", "0.5", "--out", str(out)], capsys)
    assert code == 1 and f"{url} holds no traces" in err and "not written" in err and not out.exists()
    _, _, redactor = load_monitor(SUITE)
    with open_store(url) as st:
        replay([RECORDED], StoreSink(st), redactor, received_ns=time.time_ns())  # received, never scored
    code, _, err = run_cli(["traces", "to-cases", "--store", url, "--below", "0.5", "--out", str(out)], capsys)
    assert code == 1 and f"no trace in {url} has a stored score (`referee monitor` scores them)" in err
    assert not out.exists()
    code, _, err = run_cli(["traces", "to-cases", "--store", url, "--trace", "ab" * 16, "--out", str(out)], capsys)
    assert code == 1 and "no stored trace matched" in err and not out.exists()
