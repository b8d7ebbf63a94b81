"""The plan: kinds and personas in proportion over every prefix, each slot fixed by the seed and its index alone."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

import referee
from referee.synth._documents import Chunk
from referee.synth._plan import DEFAULT_KINDS, largest_deficit, plan_slots, proportions, usable_kinds

CHUNKS = [Chunk(f"d{i % 3}.md#{i}", f"d{i % 3}.md", f"text {i}") for i in range(12)]


def test_every_prefix_is_as_close_to_the_proportions_as_whole_slots_allow() -> None:
    shares = proportions({"a": 3, "b": 1, "c": 1}, None, "kinds")
    seq = largest_deficit(shares, 200)
    for k in range(1, 201):
        counts = Counter(seq[:k])
        assert all(abs(counts[n] - s * k) < 1 for n, s in shares.items()), k


def test_a_slot_depends_on_the_seed_and_its_index_not_on_the_count() -> None:
    kw: dict[str, Any] = {"kinds": DEFAULT_KINDS, "personas": {"p": 1.0, "q": 1.0}, "chunks": CHUNKS}
    ten = plan_slots(0, 10, seed=4, **kw)
    assert plan_slots(0, 20, seed=4, **kw)[:10] == ten
    assert plan_slots(5, 10, seed=4, **kw) == ten[5:]
    assert [s.chunks for s in plan_slots(0, 10, seed=5, **kw)] != [s.chunks for s in ten]


def test_two_chunk_kinds_take_chunks_of_two_documents() -> None:
    slots = plan_slots(0, 50, seed=0, kinds={"multi_hop": 1, "comparison": 1}, personas={}, chunks=CHUNKS)
    assert all(len(s.chunks) == 2 and s.chunks[0].document != s.chunks[1].document for s in slots)


def test_a_one_chunk_corpus_asks_single_hop_questions_and_says_so() -> None:
    one = CHUNKS[:1]
    slots = plan_slots(0, 5, seed=0, kinds={"multi_hop": 1}, personas={}, chunks=one)
    assert {s.kind for s in slots} == {"single_hop"}
    assert usable_kinds({"multi_hop": 1.0, "single_hop": 1.0}, one) == [
        "multi_hop: needs two chunks and the documents make one; its slots ask for single-hop questions"]


@pytest.mark.parametrize("given", [{"a": float("inf")}, {"a": 0}, {"": 1}, {"a": True}])
def test_bad_proportions_are_refused(given: dict[str, float]) -> None:
    with pytest.raises(referee.UserError):
        proportions(given, None, "personas")
