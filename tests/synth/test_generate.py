"""Generation replies: every case checked (slot, text, quotes naming a chunk given), partial replies measured."""

from __future__ import annotations

import pytest

from referee.evaluators import ReplyInvalid
from referee.synth._documents import Chunk
from referee.synth._generate import MAX_FIELD_CHARS, generation_request, parse_cases, request_hash
from referee.synth._plan import Slot

LABELS = {"C1": "doc.md#1", "C2": "doc.md#2"}


def case(slot: int, **kw: object) -> dict:
    return {"slot": slot, "input": "Q?", "reference": "R.", "quotes": [{"chunk": "C1", "quote": "R."}], **kw}


def test_a_whole_reply() -> None:
    got, why = parse_cases({"cases": [case(1), case(2, quotes=[{"chunk": "C2", "quote": "x"}])]}, 2, LABELS)
    assert why == "" and got[2]["quotes"] == [("doc.md#2", "x")]


@pytest.mark.parametrize("bad, words", [
    (case(3), "cases[1].slot is 3, expected 1 to 2"),
    (case(1), "slot 1 is given twice"),
    (case(2, quotes=[{"chunk": "C9", "quote": "x"}]), "must name one of the chunks (C1, C2)"),
    (case(2, input="   "), "cases[1].input is missing or empty"),
    (case(2, reference="x" * (MAX_FIELD_CHARS + 1)), f"at most {MAX_FIELD_CHARS}"),
    ({**case(2), "slot": True}, "slot is True"),
    ("not an object", "cases[1] is not an object"),
])
def test_a_bad_case_is_named_and_the_rest_kept(bad: object, words: str) -> None:
    got, why = parse_cases({"cases": [case(1), bad]}, 2, LABELS)
    assert list(got) == [1]
    assert why.startswith("the reply holds 1 of the 2 cases asked for (missing slot 2)") and words in why


def test_a_reply_without_cases_is_invalid() -> None:
    with pytest.raises(ReplyInvalid, match="'cases' is missing"):
        parse_cases({"verdict": "pass"}, 2, LABELS)


def test_the_request_puts_every_chunk_in_a_data_block_and_is_stable() -> None:
    chunks = (Chunk("doc.md#1", "doc.md", "Refunds take 14 days."), Chunk("doc.md#2", "doc.md", "<slots-x>hi"))
    slots = [Slot(0, "single_hop", "new customer", chunks[:1]), Slot(1, "multi_hop", None, chunks)]
    req, labels = generation_request(0, slots, temperature=0.7, seed=3, max_tokens=100)
    user = req.messages[1].content
    assert labels == {"C1": "doc.md#1", "C2": "doc.md#2"}
    assert "1 | single_hop | chunks: C1 | persona: new customer" in user and "2 | multi_hop | chunks: C1, C2" in user
    assert "&lt;slots-x&gt;hi" in user and (req.temperature, req.seed) == (0.7, 3)
    again, _ = generation_request(0, slots, temperature=0.7, seed=3, max_tokens=100)
    assert request_hash(again) == request_hash(req)
    other, _ = generation_request(0, slots, temperature=0.7, seed=4, max_tokens=100)
    assert request_hash(other) == request_hash(req)  # the prompt's identity; the seed is recorded beside it


def test_a_runaway_reply_is_refused_whole() -> None:
    with pytest.raises(ReplyInvalid, match="the reply lists 100000 cases; 2 were asked for"):
        parse_cases({"cases": [case(1)] * 100_000}, 2, LABELS)
