"""The plan: which kind of question, which persona and which chunks each case slot gets.

Slot ``i`` is decided by the seed, the proportions and ``i`` alone, never by the number of cases asked for: the
first 10 slots of a run asking for 20 are the 10 slots of a run asking for 10, so their generation requests are
the same and a larger ``n`` pays only for the new slots (the response cache serves the rest).

Kinds and personas follow their stated proportions by the largest-deficit rule: slot ``i`` takes the option whose
share of slots ``0..i`` is furthest below its target (ties to the earlier option), so any prefix of the sequence
is as close to the proportions as whole slots allow.
"""

from __future__ import annotations

import hashlib
import math
import random
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..errors import UserError
from ._documents import Chunk

KINDS = ("single_hop", "multi_hop", "comparison", "unanswerable", "adversarial")
"""The query kinds: one fact from one chunk; an answer that needs two chunks together; two things compared (from
two chunks); a question the documents do not answer; a question built to trip a system (a false premise, a
distractor), whose answer the documents still give."""
KIND_HELP = {
    "single_hop": "a question answered by one fact of the one chunk given",
    "multi_hop": "a question whose answer needs a fact from EACH of the chunks given, combined",
    "comparison": "a question comparing two things, one described in each chunk given",
    "unanswerable": "a question on the chunk's topic that the chunk and the documents do NOT answer; the "
                    "reference says the documents do not answer it, and there is no quote",
    "adversarial": "a question built to trip a system (a false premise to correct, a distracting detail, a "
                   "misleading phrasing) that the chunk still answers",
}
TWO_CHUNK_KINDS = frozenset({"multi_hop", "comparison"})
DEFAULT_KINDS = {"single_hop": 0.4, "multi_hop": 0.2, "comparison": 0.1, "unanswerable": 0.15, "adversarial": 0.15}
BATCH_SIZE = 5
"""Slots per generation request (slots ``5b .. 5b+4`` form batch ``b``)."""
UNANSWERABLE_REFERENCE = "The documents do not answer this question."


@dataclass(frozen=True)
class Slot:
    index: int
    kind: str
    persona: str | None
    chunks: tuple[Chunk, ...]


def proportions(given: Mapping[str, float] | Sequence[str] | None, allowed: Sequence[str] | None,
                what: str) -> dict[str, float]:
    """Weights as shares summing to 1 (a list: equal shares). ``allowed``: the only names accepted."""
    if given is None:
        return {}
    weights = dict.fromkeys(given, 1.0) if not isinstance(given, Mapping) else dict(given)
    out: dict[str, float] = {}
    for name, w in weights.items():
        if not isinstance(name, str) or not name.strip():
            raise UserError(f"{what}: each name must be non-empty text, got {name!r}")
        if allowed is not None and name not in allowed:
            raise UserError(f"{what}: unknown kind {name!r} (one of {', '.join(allowed)})")
        if isinstance(w, bool) or not isinstance(w, int | float) or not math.isfinite(w) or w < 0:
            raise UserError(f"{what} {name}: the weight must be a finite number >= 0, got {w!r}")
        if w > 0:
            out[name] = float(w)
    total = sum(out.values())
    if not out or total <= 0:
        raise UserError(f"{what}: at least one weight must be above 0")
    return {k: v / total for k, v in out.items()}


_SEQUENCES: dict[tuple[tuple[str, float], ...], tuple[list[str], dict[str, int]]] = {}
"""Each proportions' sequence so far, extended on demand (a run plans its batches one after another)."""
_LOCK = threading.Lock()


def largest_deficit(shares: Mapping[str, float], count: int) -> list[str]:
    """The first ``count`` options of the sequence (see the module's docstring)."""
    return _sequence(shares, count)[:count]


def _sequence(shares: Mapping[str, float], count: int) -> list[str]:
    """The sequence, at least ``count`` long (shared: not to be changed)."""
    key = tuple(shares.items())
    with _LOCK:  # two runs in two threads must not extend one sequence at once
        seq, taken = _SEQUENCES.setdefault(key, ([], dict.fromkeys(shares, 0)))
        if len(seq) < count:
            _extend(shares, seq, taken, count)
        if len(_SEQUENCES) > 64:  # many proportions in one process (tests, notebooks): start again
            _SEQUENCES.clear()
    return seq


def _extend(shares: Mapping[str, float], seq: list[str], taken: dict[str, int], count: int) -> None:
    names = list(shares)
    order = {n: i for i, n in enumerate(names)}
    while len(seq) < count:
        i = len(seq)
        best = max(names, key=lambda n: (shares[n] * (i + 1) - taken[n], -order[n]))
        taken[best] += 1
        seq.append(best)


def _rng(seed: int, index: int) -> random.Random:
    return random.Random(int.from_bytes(hashlib.sha256(f"{seed}:{index}".encode()).digest()[:8], "big"))


def plan_slots(start: int, stop: int, *, seed: int, kinds: Mapping[str, float], personas: Mapping[str, float],
               chunks: Sequence[Chunk]) -> list[Slot]:
    """Slots ``start .. stop-1``. A two-chunk kind gets two different chunks (of two documents when there are);
    with a corpus of one chunk such slots become single-hop (:func:`usable_kinds` says so first)."""
    kind_seq = _sequence(kinds, stop)
    persona_seq = _sequence(personas, stop) if personas else None
    out = []
    for i in range(start, stop):
        rng = _rng(seed, i)
        first = chunks[rng.randrange(len(chunks))]
        kind = kind_seq[i]
        picked: tuple[Chunk, ...] = (first,)
        if kind in TWO_CHUNK_KINDS:
            second = _second(rng, first, chunks)
            if second is None:
                kind = "single_hop"
            else:
                picked = (first, second)
        out.append(Slot(i, kind, persona_seq[i] if persona_seq is not None else None, picked))
    return out


def _second(rng: random.Random, first: Chunk, chunks: Sequence[Chunk]) -> Chunk | None:
    """Another chunk, of another document when there is one: a few random draws first (a large corpus), then
    the list of the candidates (a small or one-document corpus)."""
    for _ in range(16):
        c = chunks[rng.randrange(len(chunks))]
        if c.document != first.document:
            return c
    others = [c for c in chunks if c.document != first.document] or [c for c in chunks if c is not first]
    return others[rng.randrange(len(others))] if others else None


def usable_kinds(kinds: Mapping[str, float], chunks: Sequence[Chunk]) -> list[str]:
    """Notes on kinds the corpus cannot serve (two-chunk kinds with one chunk)."""
    if len(chunks) >= 2:
        return []
    return [f"{k}: needs two chunks and the documents make one; its slots ask for single-hop questions"
            for k in kinds if k in TWO_CHUNK_KINDS]
