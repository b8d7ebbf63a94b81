"""The stand-in's replies to referee synth's requests: deterministic, in the requested shape, quotes copied from the
chunk (so the strict quote gate finds them), and labelled as the stand-in's."""

from __future__ import annotations

import json

from referee.evaluators._evidence import EvidenceChecker
from referee.providers._standin import judge_reply
from referee.synth._documents import Chunk
from referee.synth._gates import answerable_request, critic_request
from referee.synth._generate import Candidate, generation_request
from referee.synth._plan import KINDS, Slot

A = Chunk("a.md#1", "a.md", "Refunds for unopened items are issued within 14 days of the return reaching us. "
                            "Gift cards cannot be refunded or exchanged for cash under any circumstances.")
B = Chunk("b.md#1", "b.md", "Express couriers charge twelve dollars and arrive the next business day.")


def test_cases_for_every_kind_with_quotes_found_in_their_chunks() -> None:
    slots = [Slot(i, k, "new customer" if i % 2 else None, (A, B) if k in ("multi_hop", "comparison") else (A,))
             for i, k in enumerate(KINDS)]
    req, labels = generation_request(0, slots, temperature=0.7, seed=0, max_tokens=100)
    reply = judge_reply(req.messages[1].content, req.response_schema)
    assert reply == judge_reply(req.messages[1].content, req.response_schema)
    cases = json.loads(reply)["cases"]
    assert [c["slot"] for c in cases] == [1, 2, 3, 4, 5]
    texts = {"C1": A.text, "C2": B.text}
    for c, slot in zip(cases, slots, strict=True):
        assert c["input"].endswith("?") or c["input"].endswith(".")
        assert c["input"].startswith("As a new customer: ") == (slot.persona is not None)
        if slot.kind == "unanswerable":
            assert c["quotes"] == [] and "do not answer" in c["reference"]
            continue
        assert len(c["quotes"]) == len(slot.chunks)
        for q in c["quotes"]:
            assert EvidenceChecker({q["chunk"]: texts[q["chunk"]]}, strict=True).check(q["quote"]).found
    assert set(labels) == {"C1", "C2"}


def test_the_critic_and_the_answerable_judge() -> None:
    good = Candidate(Slot(0, "single_hop", None, (A,)), 0, "How long do refunds take?",
                     "Refunds for unopened items are issued within 14 days of the return reaching us.", [], "h")
    made_up = Candidate(Slot(0, "single_hop", None, (A,)), 0, "How long do refunds take?",
                        "Refunds arrive by carrier pigeon on Sundays.", [], "h")
    chunks = {A.id: A}
    scores = [json.loads(judge_reply(r.messages[1].content, r.response_schema))
              for r in (critic_request(c, chunks, max_tokens=50, seed=0) for c in (good, made_up))]
    assert [s["score"] for s in scores] == [5, 2] and all("stand-in judge" in s["reason"] for s in scores)
    asks = [Candidate(Slot(0, "unanswerable", None, (A,)), 0, q, "", [], "h")
            for q in ("Can gift cards be exchanged for cash?", "What colour is the Neptune office in 2999?")]
    verdicts = [json.loads(judge_reply(r.messages[1].content, r.response_schema))["answerable"]
                for r in (answerable_request(c, [A], max_tokens=50, seed=0) for c in asks)]
    assert verdicts == [True, False]
