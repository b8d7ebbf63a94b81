"""The gates one by one: duplicates (all pairs and MinHash), the strict quote, the answer in the input."""

from __future__ import annotations

import random

import pytest

from referee.synth import _gates
from referee.synth._documents import Chunk
from referee.synth._gates import DuplicateIndex, answerable_prefilter, leak_gate, quote_gate
from referee.synth._generate import Candidate
from referee.synth._plan import Slot

CHUNK = Chunk("policy.md#1", "policy.md", "Refunds are not issued for gift cards. Refunds for unopened items take "
                                           "14 days. The Leeds centre repairs laptops under warranty.")
OTHER = Chunk("other.md#1", "other.md", "Express delivery costs twelve dollars and arrives the next day.")
CHUNKS = {c.id: c for c in (CHUNK, OTHER)}


def cand(question: str, reference: str, quotes: list[tuple[str, str]], kind: str = "single_hop",
         chunks: tuple[Chunk, ...] = (CHUNK,)) -> Candidate:
    return Candidate(Slot(0, kind, None, chunks), 0, question, reference, quotes, "h")


@pytest.mark.parametrize("question, reference", [
    ("How many days do refunds for unopened items take?", "14 days"),
    ("Which city repairs laptops under warranty?", "Leeds"),
    ("How much is express delivery?", "$12"),
    ("Are refunds issued for gift cards?", "No."),
    ("What happens with refunds for gift cards?", "Refunds are not issued for gift cards."),
])
def test_short_answers_and_fair_questions_do_not_count_as_leaks(question: str, reference: str) -> None:
    assert leak_gate(cand(question, reference, []))["passed"]


@pytest.mark.parametrize("question, reference", [
    ("Refunds for unopened items take 14 days: how long do refunds for unopened items take?", "14 days"),
    ("Is it true that the Leeds centre repairs laptops under warranty?",
     "The Leeds centre repairs laptops under warranty."),
    ("Who repairs laptops, the Leeds centre?", "Leeds"),
])
def test_an_input_holding_its_whole_answer_is_a_leak(question: str, reference: str) -> None:
    got = leak_gate(cand(question, reference, []))
    assert not got["passed"] and got["share"] == 1.0


def test_the_quote_gate_uses_the_strict_rules() -> None:
    ok = cand("How long?", "Refunds for unopened items take 14 days.",
              [("policy.md#1", "Refunds for unopened items take 14 days.")])
    assert quote_gate(ok, CHUNKS)["passed"]
    # An ellipsis that drops a negation, fragments out of order, a name:line reference, a quote from another chunk.
    for quote in ("Refunds are ... issued for gift cards", "take 14 days ... Refunds for unopened items",
                  "policy.md:1", "Express delivery costs twelve dollars"):
        got = quote_gate(cand("Q?", "Refunds are issued for gift cards.", [("policy.md#1", quote)]), CHUNKS)
        assert not got["passed"] and got["why"] == "the quote is not text of policy.md#1", quote


def test_a_found_quote_must_bear_on_the_reference() -> None:
    c = cand("Where are laptops repaired?", "In Manchester.",
             [("policy.md#1", "Refunds are not issued for gift cards.")])
    got = quote_gate(c, CHUNKS)
    assert not got["passed"] and got["why"] == "the quote does not bear on the reference"


def test_a_two_chunk_case_needs_a_quote_in_each_chunk() -> None:
    ref = "Refunds for unopened items take 14 days; express delivery costs twelve dollars."
    both = [("policy.md#1", "Refunds for unopened items take 14 days."),
            ("other.md#1", "Express delivery costs twelve dollars")]
    assert quote_gate(cand("Q?", ref, both, "multi_hop", (CHUNK, OTHER)), CHUNKS)["passed"]
    one = quote_gate(cand("Q?", ref, both[:1], "multi_hop", (CHUNK, OTHER)), CHUNKS)
    assert not one["passed"] and one["why"] == "no quote given from other.md#1"


def test_unanswerable_cases_need_no_quote() -> None:
    c = cand("What colour is the Neptune office?", "The documents do not answer this question.", [],
             "unanswerable")
    assert quote_gate(c, CHUNKS) == {"passed": True, "applies": False}
    assert answerable_prefilter("What colour is the Neptune office?", [CHUNK]) == (False, 0.0)
    hit, share = answerable_prefilter("Are refunds issued for gift cards?", [CHUNK])
    assert hit and share == 1.0


def test_duplicates_exact_and_near() -> None:
    idx = DuplicateIndex(0.7)
    idx.add("How long do refunds for unopened items take?", "kept:1")
    exact = idx.nearest("how long do REFUNDS for unopened items take")
    assert exact is not None and exact.similarity == 1.0 and exact.label == "kept:1"
    near = idx.nearest("How long do refunds for unopened items usually take?")
    assert near is not None and 0.7 <= near.similarity < 1.0
    assert idx.nearest("Which city repairs laptops under warranty?") is None


def _sentence(rng: random.Random) -> str:
    words = ["refund", "parcel", "warranty", "laptop", "courier", "invoice", "battery", "account", "voucher",
             "island", "freight", "serial", "postage", "licence", "credit", "profile", "warehouse", "tracking"]
    return " ".join(rng.choice(words) + str(rng.randrange(1000)) for _ in range(8))


def test_minhash_finds_near_duplicates_above_the_all_pairs_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_gates, "ALL_PAIRS_LIMIT", 50)
    rng = random.Random(7)
    texts = [_sentence(rng) for _ in range(400)]
    idx = DuplicateIndex(0.7)
    for i, t in enumerate(texts):
        idx.add(t, f"kept:{i}")
    found = 0
    for i in range(0, 400, 10):
        words = texts[i].split()
        near = " ".join(words[:-1] + [words[-1] + "x"])  # one word changed a little
        hit = idx.nearest(near)
        if hit is not None and hit.label == f"kept:{i}":
            found += 1
    assert found >= 38  # 40 planted; the bands find a pair at 0.7 with probability 0.988
    assert idx.nearest(_sentence(random.Random(99))) is None
