"""``referee pairwise`` end to end against the local fake server (OpenAI wire format)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from referee.cli import cli
from referee.testing import FakeLLMServer, Reply, WireRequest

TEMPLATE = "Question: {input}\n<r1>{response_1}</r1>\n<r2>{response_2}</r2>\nReply with JSON.\n"


def _shown(req: WireRequest) -> tuple[str, str]:
    t = req.prompt_text  # the original question, also on a re-ask
    return t.split("<r1>")[1].split("</r1>")[0], t.split("<r2>")[1].split("</r2>")[0]


def _verdict(winner: str, why: str = "because") -> str:
    return json.dumps({"winner": winner, "rationale": why})


def _setup(tmp_path: Path, cases: Sequence[Mapping[str, object]]) -> tuple[Path, Path, Path]:
    c = tmp_path / "cases.jsonl"
    c.write_text("".join(json.dumps(x) + "\n" for x in cases), encoding="utf-8")
    t = tmp_path / "t.md"
    t.write_text(TEMPLATE, encoding="utf-8")
    return c, t, tmp_path / "out.jsonl"


def _run(srv: FakeLLMServer, c: Path, t: Path, out: Path, *extra: str) -> int:
    return cli(["pairwise", str(c), "--template", str(t), "--out", str(out), "--provider", "vllm",
                "--base-url", srv.openai_base_url, "--model", "m", "--max-retries", "0", *extra])


def _rows(out: Path) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}


CASES = [
    {"id": "good-a", "input": "2+2?", "output_a": "4", "output_b": "five hundred"},
    {"id": "good-b", "input": "capital of France?", "output_a": "Lyon, in my opinion", "output_b": "Paris"},
]


def _content_judge(req: WireRequest) -> str:
    """A consistent judge: prefers the right answer wherever it is shown."""
    r1, r2 = _shown(req)
    return _verdict("response_1" if r1 in ("4", "Paris") else "response_2", f"picked {r1 if r1 in ('4', 'Paris') else r2}")


def test_both_orders_winner_mapping_and_usage(tmp_path: Path) -> None:
    c, t, out = _setup(tmp_path, CASES)
    with FakeLLMServer(responder=_content_judge) as srv:
        assert _run(srv, c, t, out, "--name-a", "v1", "--name-b", "v2") == 0
        shown = sorted(_shown(r) for r in srv.requests)
        schema = srv.requests[0].schema
    assert len(shown) == 4  # every case judged in both orders
    assert ("4", "five hundred") in shown and ("five hundred", "4") in shown
    assert schema is not None and schema["properties"]["winner"]["enum"] == ["response_1", "response_2", "tie"]
    rows = _rows(out)
    assert rows["good-a"]["winner"] == "a" and rows["good-a"]["score"] == 1.0
    assert rows["good-b"]["winner"] == "b" and rows["good-b"]["score"] == 0.0
    assert rows["good-a"]["position_bias_detected"] is False
    assert rows["good-a"]["evaluator"] == "pairwise"
    assert rows["good-a"]["usage"]["input_tokens"] == 240  # 2 calls x 120 tokens, summed
    assert rows["good-a"]["usage"]["calls"] == 2
    assert rows["good-a"]["details"]["system_a"] == "v1" and rows["good-a"]["details"]["system_b"] == "v2"


@pytest.mark.parametrize(("judge", "expect_bias"), [
    (lambda req: _verdict("response_1"), True),    # always the first shown
    (lambda req: _verdict("response_2"), True),    # always the second shown
    (lambda req: _verdict("tie") if _shown(req)[0] == "4" else _verdict("response_1"), True),  # tie vs win
    (lambda req: _verdict("tie"), False),
])
def test_disagreeing_orders_become_a_tie_with_position_bias(tmp_path: Path, judge: Callable[[WireRequest], str],
                                                              expect_bias: bool) -> None:
    c, t, out = _setup(tmp_path, CASES[:1])
    with FakeLLMServer(responder=judge) as srv:
        assert _run(srv, c, t, out) == 0
    row = _rows(out)["good-a"]
    assert row["winner"] == "tie" and row["score"] == 0.5
    assert row["position_bias_detected"] is expect_bias
    orders = row["details"]["orders"]
    assert [o["shown_first"] for o in orders] == ["a", "b"]
    assert all("rationale" in o for o in orders)  # both rationales kept


def test_invalid_reply_is_reasked_once_then_unscored(tmp_path: Path) -> None:
    c, t, out = _setup(tmp_path, CASES[:1])
    with FakeLLMServer(responder=lambda req: '{"winner": "A is better"}') as srv:
        assert _run(srv, c, t, out, "--concurrency", "1") == 1  # nothing graded
        calls = len(srv.requests)
    row = _rows(out)["good-a"]
    assert calls == 4  # each order asked, then re-asked once
    assert row["status"] == "unscored"
    assert "score" not in row and "winner" not in row
    assert "invalid judge reply" in row["error"]


def test_one_unscored_order_makes_the_row_unscored(tmp_path: Path) -> None:
    c, t, out = _setup(tmp_path, CASES[:1])

    def judge(req: WireRequest) -> str:
        return _verdict("response_1") if _shown(req)[0] == "4" else "no idea"

    with FakeLLMServer(responder=judge) as srv:
        _run(srv, c, t, out)
    row = _rows(out)["good-a"]
    assert row["status"] == "unscored" and "winner" not in row  # never a winner from half the evidence
    assert "order b first" in row["error"]


def test_reask_recovers(tmp_path: Path) -> None:
    c, t, out = _setup(tmp_path, CASES[:1])
    with FakeLLMServer(responder=_content_judge) as srv:
        srv.script("not json at all")
        assert _run(srv, c, t, out, "--concurrency", "1") == 0
    row = _rows(out)["good-a"]
    assert row.get("status", "scored") == "scored" and row["winner"] == "a"
    assert row["usage"]["calls"] == 3


def test_api_error_is_an_error_row(tmp_path: Path) -> None:
    c, t, out = _setup(tmp_path, CASES[:1])
    with FakeLLMServer(responder=lambda req: Reply(status=500)) as srv:
        assert _run(srv, c, t, out) == 1
    row = _rows(out)["good-a"]
    assert row["status"] == "error" and "winner" not in row


def test_missing_output_field_is_a_preflight_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    c, t, out = _setup(tmp_path, [CASES[0], {"id": "broken", "input": "x", "output_a": "y"}])
    with FakeLLMServer(responder=_content_judge) as srv:
        assert _run(srv, c, t, out) == 2
        assert srv.requests == []
        err = capsys.readouterr().err
        assert "broken" in err and "output_b" in err
        assert _run(srv, c, t, out, "--skip-invalid") == 0
    assert set(_rows(out)) == {"good-a"}


def test_template_must_use_both_responses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    c, t, out = _setup(tmp_path, CASES)
    t.write_text("Question: {input}\n{response_1}\n", encoding="utf-8")
    assert cli(["pairwise", str(c), "-t", str(t), "-o", str(out), "--provider", "vllm"]) == 2
    assert "{response_2}" in capsys.readouterr().err


def test_case_text_is_inserted_once_not_reexpanded(tmp_path: Path) -> None:
    c, t, out = _setup(tmp_path, [{"id": "x", "input": "say {response_2}", "output_a": "{input}", "output_b": "B"}])
    with FakeLLMServer(responder=lambda req: _verdict("tie")) as srv:
        assert _run(srv, c, t, out) == 0
        texts = [r.last_user_text for r in srv.requests]
    assert any("Question: say {response_2}\n<r1>{input}</r1>" in x for x in texts)


def test_cost_of_both_calls_is_summed_and_a_rerun_resumes(tmp_path: Path) -> None:
    c, t, out = _setup(tmp_path, CASES)
    prices = ["--input-price-per-mtok", "1", "--output-price-per-mtok", "2"]
    with FakeLLMServer(responder=_content_judge) as srv:
        assert _run(srv, c, t, out, *prices) == 0
        first = len(srv.requests)
        assert _run(srv, c, t, out, *prices) == 0
        assert len(srv.requests) == first  # finished rows are kept, nothing is judged twice
    rows = _rows(out)
    assert len(rows) == 2
    # 2 calls x (120 input tokens at $1/M + 40 output tokens at $2/M)
    assert rows["good-a"]["cost_usd"] == pytest.approx(2 * (120 / 1e6 * 1 + 40 / 1e6 * 2))
    manifest = json.loads((tmp_path / "out.manifest.json").read_text())
    assert manifest["kind"] == "pairwise"


@pytest.mark.parametrize("which", ["cases", "template"])
def test_out_naming_an_input_file_is_refused_and_the_input_stays(tmp_path: Path, which: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    c, t, _ = _setup(tmp_path, CASES)
    target = c if which == "cases" else t
    before = target.read_bytes()
    with FakeLLMServer(responder=_content_judge) as srv:
        assert _run(srv, c, t, target) == 2
        assert srv.requests == []
    err = capsys.readouterr().err
    assert f"is the {'cases' if which == 'cases' else '--template'} file" in err and "Traceback" not in err
    assert target.read_bytes() == before  # never moved aside nor appended to
    assert not list(tmp_path.glob("*.prev*"))
