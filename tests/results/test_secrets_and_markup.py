"""Keys and markup (echoed keys redacted, JUnit/Markdown control characters, bidi, rank CSP,
SIGTERM leaves the manifest ``interrupted``)."""

from __future__ import annotations

import io
import itertools
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rich.console import Console

from referee.cli import cli
from referee.reports._markdown_summary import _cell
from referee.reports._safe import CSP, SafeConsole
from referee.results import read_results
from referee.results._manifest import RunManifest
from referee.testing import FakeLLMServer
from tests.support.cli import close_pipes

KEY = "sk-test-abcdefghijklmnopqrstuvwxyz0123"
NASTY = "a\x00b\x07c\x1b[31md\ufffee \u202egnp.exe\u202c f"


def test_a_judge_echoing_the_api_key_is_redacted_in_rows_and_cache(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "c.jsonl").write_text('{"id": "a", "output": "x"}\n')
    (tmp_path / "t.md").write_text("{output}")
    reply = json.dumps({"overall_score": 0.2, "quality": {"score": 0.2, "rationale": f"my key is {KEY}"}})
    with FakeLLMServer(responder=lambda req: "Sure, the key: " + KEY + "\n" + reply) as srv:
        os.environ["OPENAI_API_KEY"] = KEY
        try:
            cli(["judge", str(tmp_path / "c.jsonl"), "-t", str(tmp_path / "t.md"), "-o", str(tmp_path / "r.jsonl"),
                 "--provider", "openai", "--base-url", srv.openai_base_url])
        finally:
            del os.environ["OPENAI_API_KEY"]
    capsys.readouterr()
    (row,) = read_results(tmp_path / "r.jsonl").rows
    assert row.status == "scored"
    assert KEY not in (tmp_path / "r.jsonl").read_text() and KEY not in (row.rationale or "")
    for db in (tmp_path / ".referee").rglob("*.sqlite"):
        with sqlite3.connect(db) as con:
            dump = "\n".join(str(r) for t in con.execute("select name from sqlite_master where type='table'")
                             for r in con.execute(f"select * from {t[0]}"))
        assert KEY not in dump


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_a_batch_reply_echoing_the_api_key_reaches_no_file(tmp_path: Path, provider: str,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Batch results fill the cache before any caller sees them: they go through the same redaction first."""
    monkeypatch.setenv("REFEREE_BATCH_POLL_S", "0.05")
    monkeypatch.setenv("REFEREE_BATCH_WINDOW_S", "0.05")
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(var, KEY)
    (tmp_path / "c.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "output": f"x{i}"}) + "\n"
                                              for i in range(3)))
    (tmp_path / "t.md").write_text("{output}")
    reply = json.dumps({"overall_score": 0.2, "quality": {"score": 0.2, "rationale": f"my key is {KEY}"}})
    args = ["judge", str(tmp_path / "c.jsonl"), "-t", str(tmp_path / "t.md"), "--provider", provider,
            "--model", "judge-model", "--batch"]
    with FakeLLMServer(responder=lambda req: "Sure, the key: " + KEY + "\n" + reply) as srv:
        base = srv.openai_base_url if provider == "openai" else srv.url
        assert cli([*args, "-o", str(tmp_path / "r.jsonl"), "--base-url", base]) == 0
        assert srv.batch_jobs  # the replies really came from a batch job
        # A rerun answers from the cache the batch filled: what it holds is redacted too.
        assert cli([*args, "-o", str(tmp_path / "again.jsonl"), "--base-url", base]) == 0
        assert len(srv.batch_jobs) == 1
    capsys.readouterr()
    for name in ("r.jsonl", "again.jsonl"):
        rows = read_results(tmp_path / name).rows
        assert len(rows) == 3 and all(r.status == "scored" for r in rows)
        assert all("my key is ***" in (r.rationale or "") for r in rows)  # the echo arrived, masked
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.name not in ("c.jsonl", "t.md")]
    assert any(p.suffix == ".sqlite" for p in written) and any(p.name == "r.manifest.json" for p in written)
    for p in written:  # every byte of every file the runs wrote: results, manifests, the cache (and its journal)
        assert KEY.encode() not in p.read_bytes(), p


@pytest.fixture
def nasty_results(tmp_path: Path) -> Path:
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps({"id": f"{NASTY}-{i}", "status": "scored", "score": 0.1, "category": NASTY,
                                     "rationale": NASTY}) + "\n" for i in range(3)))
    return p


def test_junit_and_markdown_stay_well_formed_with_control_characters(nasty_results: Path, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    junit, md = tmp_path / "j.xml", tmp_path / "s.md"
    cli(["score", str(nasty_results), "--junit-xml", str(junit), "--markdown", str(md), "--fail-under", "0.9"])
    capsys.readouterr()
    root = ET.parse(junit).getroot()  # well-formed XML (it raised before)
    texts = [v for el in root.iter() for v in [*el.attrib.values(), el.text or ""]]
    assert any("<U+202E>" in t for t in texts) and not any("\u202e" in t or "\x1b" in t for t in texts)
    text = md.read_text(encoding="utf-8")
    assert "\x00" not in text and "\x1b" not in text and "\u202e" not in text
    cell = _cell(NASTY)  # the one escape every case-text cell of the Markdown goes through
    assert r"U\+202E" in cell and not any(c in cell for c in "\x00\x07\x1b\u202e")


def test_html_reports_neutralise_bidi_and_rank_has_the_csp(nasty_results: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    html = tmp_path / "r.html"
    cli(["report", str(nasty_results), "--html", str(html)])
    page = html.read_text(encoding="utf-8")
    assert "\u202e" not in page and "&lt;U+202E&gt;" in page and "\x00" not in page
    assert f'content="{CSP}"' in page
    pairs = tmp_path / "p.jsonl"
    pairs.write_text("".join(json.dumps({"id": f"p{i}", "status": "scored", "winner": "a", "score": 1.0,
                                         "details": {"name_a": "sys\u202eA", "name_b": "B"}}) + "\n"
                             for i in range(3)))
    rank = tmp_path / "rank.html"
    cli(["rank", str(pairs), "--html", str(rank)])
    capsys.readouterr()
    page = rank.read_text(encoding="utf-8")
    assert f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' in page and "\u202e" not in page


def test_the_terminal_shows_bidi_controls_visibly() -> None:
    safe, plain = io.StringIO(), io.StringIO()
    SafeConsole(file=safe, width=80).print("case \u202egnp.exe")
    Console(file=plain, width=80).print("case \u202egnp.exe")
    assert "\u202e" in plain.getvalue()  # rich alone passes it through
    assert "\u202e" not in safe.getvalue() and "case <U+202E>gnp.exe" in safe.getvalue()


def test_plain_warnings_and_errors_show_bidi_controls_visibly(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Lines echoed without rich (errors, usage errors, warnings) go through the same rule as SafeConsole."""
    from referee.cli._common import echo_failures
    from referee.results import ResultRow

    cases = tmp_path / "c\u202elsnoj.jsonl"
    cases.write_text('{"id": "a", "output": "x"}\nnot json\n')
    (tmp_path / "t.md").write_text("{output}")
    # A UserError (the CLI's error handler) naming the user's file.
    assert cli(["judge", str(cases), "-t", str(tmp_path / "t.md"), "-o", str(tmp_path / "r.jsonl"),
                "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1"]) == 2
    err = capsys.readouterr().err
    assert "c<U+202E>lsnoj.jsonl" in err and "\u202e" not in err
    # A click usage error quoting the user's value.
    assert cli(["score", str(tmp_path / "r\u202egnp.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "r<U+202E>gnp.jsonl" in err and "\u202e" not in err
    # A warning naming a case (echo_err: every command's warnings).
    echo_failures([ResultRow(id="case\u202egnp.exe\x1b[2J", status="error", error="boom\u2066")])
    err = capsys.readouterr().err
    assert "case<U+202E>gnp.exe[2J" in err
    assert "boom<U+2066>" in err and not any(c in err for c in "\u202e\u2066\x1b")


def test_sigterm_leaves_the_manifest_interrupted_and_keeps_rows(tmp_path: Path) -> None:
    (tmp_path / "c.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "output": f"x{i}"}) + "\n"
                                              for i in range(30)))
    (tmp_path / "t.md").write_text("{output}")
    # Replies after the 3rd wait until SIGTERM has been sent: a busy machine must not let the run finish first.
    released, seen = threading.Event(), itertools.count(1)

    def respond(req: object) -> str:
        if next(seen) > 3:
            released.wait(120)
        return '{"overall_score": 0.5}'

    with FakeLLMServer(responder=respond, latency=0.3) as srv:
        p = subprocess.Popen([sys.executable, "-m", "referee", "judge", str(tmp_path / "c.jsonl"), "-t",
                              str(tmp_path / "t.md"), "-o", str(tmp_path / "r.jsonl"), "--provider", "openai",
                              "--base-url", srv.openai_base_url, "--concurrency", "1"],
                             env={**os.environ, "OPENAI_API_KEY": KEY}, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while len(srv.requests) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        p.terminate()
        try:
            code = p.wait(timeout=60)
        finally:
            released.set()
    err = p.stderr.read() if p.stderr else ""
    close_pipes(p)
    assert code == 130, err
    man = RunManifest.read(tmp_path / "r.jsonl")
    assert man is not None and man.status == "interrupted"
    rows = read_results(tmp_path / "r.jsonl", strict=True).rows
    assert 1 <= len(rows) < 30 and all(r.status == "scored" for r in rows)
    assert not (tmp_path / "r.jsonl.lock").exists()


def test_whatever_a_command_puts_in_a_manifests_extra_is_written_without_url_credentials(tmp_path: Path) -> None:
    """Every copy of a manifest (the file beside the results, the run-history store) masks a URL's user info,
    secret query values and key-shaped tokens anywhere in ``extra``, filled after construction or not."""
    from referee.results._manifest import RunManifest
    from referee.store._recorder import manifest_bytes

    m = RunManifest(kind="episodes", extra={"agent": {"url": "http://me:Pa55-Very-Secret@h/a?token=T0k-Secret-9"}})
    m.extra["later"] = ["https://x:p@ss-Secret-7@h2/", {"key": "sk-live-ABCDEFGHIJKLMNOP"}]
    m.write(tmp_path / "r.jsonl")
    for written in ((tmp_path / "r.manifest.json").read_bytes(), manifest_bytes(m)):
        for secret in (b"Pa55-Very-Secret", b"T0k-Secret-9", b"ss-Secret-7", b"ABCDEFGHIJKLMNOP"):
            assert secret not in written
        assert b"h2/" in written and b"/a?token=***" in written
