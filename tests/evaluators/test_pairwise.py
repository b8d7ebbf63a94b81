"""The pairwise reply parser: JSON verdicts, published plain-text verdicts, and recorded LLMBar judge text."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.evaluators._pairwise import parse_pairwise_reply, reconcile, to_winner
from referee.evaluators._reply import ReplyInvalid


@pytest.mark.parametrize(("text", "pick"), [
    ('{"winner": "response_1", "rationale": "r"}', "1"),
    ('{"winner": "response_2", "rationale": "r"}', "2"),
    ('{"winner": "tie", "rationale": "r"}', "tie"),
    ('```json\n{"winner": "Response_2", "rationale": "r"}\n```', "2"),
    ('Here is my verdict: {"winner": "response_1", "rationale": "x"}', "1"),
    ("Output (a)", "1"),
    ("Output (b)", "2"),
    ("Output (a) misses the point. Output (b) answers it. Therefore, Output (b) is better.", "2"),
    ("Output (b) is vague, while Output (a) does not err. Therefore, Output (a) is better.", "1"),
    ("My final verdict: [[B]]", "2"),
])
def test_parses_json_and_text_verdicts(text: str, pick: str) -> None:
    assert parse_pairwise_reply(text).pick == pick


@pytest.mark.parametrize("text", [
    "",
    '{"winner": "response_3", "rationale": "r"}',
    '{"winner": "both", "rationale": "r"}',
    '{"winner": true}',
    '{"rationale": "no winner here"}',
    "I cannot decide.",
    "Output (a) and Output (b) are both fine.",
    "Therefore, neither Output (a) nor Output (b) is better.",
])
def test_anything_else_is_invalid(text: str) -> None:
    with pytest.raises(ReplyInvalid):
        parse_pairwise_reply(text)


def test_rationale_is_kept() -> None:
    assert parse_pairwise_reply('{"winner": "tie", "rationale": "equal"}').rationale == "equal"


def test_winner_mapping_and_reconcile() -> None:
    assert to_winner("1", "a") == "a" and to_winner("1", "b") == "b"
    assert to_winner("2", "a") == "b" and to_winner("2", "b") == "a"
    assert to_winner("tie", "b") == "tie"
    assert reconcile("a", "a") == ("a", False)
    assert reconcile("a", "b") == ("tie", True)
    assert reconcile("tie", "b") == ("tie", True)  # a tie against a win is a disagreement too
    assert reconcile("tie", "tie") == ("tie", False)


def test_recorded_llmbar_completions_parse_to_the_recorded_verdicts(shared_data: Path) -> None:
    """GPT-4 and ChatGPT completions of LLMBar replayed through referee's parser."""
    from referee.metaeval._llmbar import parse_raw, read_raw_results

    files = sorted((shared_data / "llmbar" / "raw_results").rglob("*.jsonl"))
    assert files, "no raw_results files"
    total = agree = 0
    recorded_unparsed = []
    wrong_winner = []
    for f in files:
        for rv in read_raw_results(f):
            total += 1
            got = parse_raw(rv)
            agree += got == rv.recorded
            if rv.recorded is None:
                recorded_unparsed.append(got)
            elif got is not None and got != rv.recorded:
                wrong_winner.append(rv)
    assert total > 15000
    # Every reply upstream could not parse comes out unscored here, never as a winner.
    assert recorded_unparsed and all(g is None for g in recorded_unparsed)
    assert agree / total >= 0.9995
    # The only replies where referee names a different winner are debate syntheses that quote the other
    # assistants ("Assistant (a) ... Output (a) is better") before concluding; referee takes the conclusion.
    assert len(wrong_winner) <= 2
    assert all("Assistant (" in rv.completion for rv in wrong_winner)


@pytest.mark.parametrize("text", [
    "Response 1 is wrong and unhelpful.",            # a label merely mentioned is no verdict
    "Response_1 contains errors.",
    "Output (b) is not better.",
    "Response 2 is not better than the other; I cannot pick.",
    '{"rationale": "Response 2 is worse"}',          # JSON without a winner
    "Neither is better. Response 1 is long.",
    "I refuse. [[A]] and [[B]] are both bad",         # two different verdict brackets
])
def test_a_mentioned_label_is_not_a_verdict(text: str) -> None:
    with pytest.raises(ReplyInvalid):
        parse_pairwise_reply(text)


@pytest.mark.parametrize(("text", "pick"), [
    ("**Response 2**.", "2"),
    ("Verdict: [[B]]", "2"),
    ("Tie.", "tie"),
    ("My final verdict: [[C]]", "tie"),
    ("response2", "2"),
])
def test_bare_labels_are_verdicts(text: str, pick: str) -> None:
    assert parse_pairwise_reply(text).pick == pick


def test_a_prose_reply_naming_one_response_is_unscored_end_to_end(tmp_path: Path) -> None:
    """The judge says "Response 1 is wrong": that must not become a win for the response shown first."""
    import json

    from referee.cli import cli
    from referee.testing import FakeLLMServer

    cases = tmp_path / "c.jsonl"
    cases.write_text(json.dumps({"id": "x", "input": "q", "output_a": "A", "output_b": "B"}) + "\n")
    tmpl = tmp_path / "t.md"
    tmpl.write_text("{input}\n<r1>{response_1}</r1>\n<r2>{response_2}</r2>\n")
    out = tmp_path / "out.jsonl"
    with FakeLLMServer(responder=lambda req: "Response 1 is wrong and unhelpful.") as srv:
        assert cli(["pairwise", str(cases), "-t", str(tmpl), "-o", str(out), "--provider", "vllm",
                    "--base-url", srv.openai_base_url, "--model", "m", "--max-retries", "0"]) == 1
    row = json.loads(out.read_text())
    assert row["status"] == "unscored" and "winner" not in row and "score" not in row
