"""The gates a generated case must pass to be kept, in this fixed order (program checks first, so no judge is paid to
look at a case a program already rejected):

1. ``duplicate``: the input is not an exact or near duplicate of a kept case, of the suite's existing cases or of
   labelled cases. Measure: Jaccard similarity of the sets of character 4-grams of the normalised input (NFKC,
   case-folded, every run of non-word characters one space); a near duplicate at :data:`NEAR_DUPLICATE` (0.7) or
   above, an exact duplicate when the normalised texts are equal. Up to :data:`ALL_PAIRS_LIMIT` texts every pair
   is compared; above it MinHash (120 hashes, 24 bands of 5) proposes the pairs, each then measured exactly (a
   pair at 0.7 is proposed with probability 0.988, at 0.8 with 0.9999; ``bench/bench_synth.py`` measures both).
2. ``quote``: an answerable case's reference is supported by a quote found in its source chunk by the evidence
   matcher's strict rules (:class:`referee.evaluators._evidence.EvidenceChecker` with ``strict=True``: text of
   the chunk only, ellipsis fragments in order, nothing of meaning elided), one quote in each chunk of a two-chunk
   kind, and the quote bears on the reference (they share a content word, or the reference is text of the quote).
3. ``leak``: the input does not give its answer away: the reference's content words (numbers whole) are not all
   in the input. A short answer (a number, a name) is rejected only when the input holds it all: "How many days do
   refunds take?" keeps "14 days" (14 is not in the input).
4. ``unanswerable``: an unanswerable case is not answered by the documents. A lexical prefilter rejects it when
   one sentence of the documents holds :data:`ANSWERABLE_SHARE` of the question's content words; otherwise a judge
   reads the question with its chunk and the chunks closest to it and says whether they answer it (answerable or
   undecided: rejected).
5. ``critic``: a judge scores the case 1-5 (a clear, realistic question; a correct, complete reference; the right
   kind); below the threshold (default :data:`CRITIC_THRESHOLD`, 3) the case is dropped, and a critic that cannot
   decide drops it too. Never rewritten and kept.
"""

from __future__ import annotations

import re
import unicodedata
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..evaluators._claims import content_words, related
from ..evaluators._evidence import EvidenceChecker, normalise
from ..evaluators._prompt_guard import data_block, judge_request, make_nonce, system_prompt
from ..evaluators._reply import ReplyInvalid, as_number, ask_judge, parse_verdict
from ..runner._client import JudgeClient
from ._documents import Chunk
from ._generate import Candidate

GATES = ("duplicate", "quote", "leak", "unanswerable", "critic")
NEAR_DUPLICATE = 0.7
ALL_PAIRS_LIMIT = 500
SHINGLE = 4
ANSWERABLE_SHARE = 0.8
CRITIC_THRESHOLD = 3.0
CRITIC_SCHEMA = "referee_synth_critic"
ANSWERABLE_SCHEMA = "referee_synth_answerable"

# -- duplicates ----------------------------------------------------------------------------------------------
_NONWORD = re.compile(r"[\W_]+", re.UNICODE)
_HASHES, _BANDS = 120, 24
_PRIME = (1 << 31) - 1
_R = np.random.default_rng(20251204)
_A = _R.integers(1, _PRIME, _HASHES, dtype=np.uint64)
_B = _R.integers(0, _PRIME, _HASHES, dtype=np.uint64)


def dedup_text(text: str) -> str:
    return _NONWORD.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def shingles(text: str) -> frozenset[str]:
    t = dedup_text(text)
    if len(t) <= SHINGLE:
        return frozenset({t})
    return frozenset(t[i:i + SHINGLE] for i in range(len(t) - SHINGLE + 1))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def _minhash(sh: frozenset[str]) -> np.ndarray:
    x = np.fromiter((zlib.crc32(s.encode("utf-8", "surrogatepass")) & _PRIME for s in sh), dtype=np.uint64,
                    count=len(sh))
    sig: np.ndarray = ((np.outer(_A, x) + _B[:, None]) % _PRIME).min(axis=1)
    return sig


@dataclass(frozen=True)
class Near:
    label: str
    """What it duplicates: ``kept:<id>``, ``existing:<id>``, ``labelled:<id>``."""
    similarity: float


class DuplicateIndex:
    """The texts seen so far, and the nearest one to a new text (see the module's docstring)."""

    def __init__(self, threshold: float = NEAR_DUPLICATE) -> None:
        self.threshold = threshold
        self.exact: dict[str, str] = {}
        self.sets: list[frozenset[str]] = []
        self.labels: list[str] = []
        self.buckets: list[dict[bytes, list[int]]] = [{} for _ in range(_BANDS)]
        self._sigs: list[np.ndarray] = []

    def __len__(self) -> int:
        return len(self.labels)

    def _bands(self, sig: np.ndarray) -> list[bytes]:
        rows = _HASHES // _BANDS
        return [sig[b * rows:(b + 1) * rows].tobytes() for b in range(_BANDS)]

    def add(self, text: str, label: str) -> None:
        self.exact.setdefault(dedup_text(text), label)
        sh = shingles(text)
        i = len(self.labels)
        self.sets.append(sh)
        self.labels.append(label)
        sig = _minhash(sh)
        self._sigs.append(sig)
        for b, key in enumerate(self._bands(sig)):
            self.buckets[b].setdefault(key, []).append(i)

    def nearest(self, text: str) -> Near | None:
        """The most similar text at or above the threshold (an exact duplicate first), or None."""
        exact = self.exact.get(dedup_text(text))
        if exact is not None:
            return Near(exact, 1.0)
        sh = shingles(text)
        if len(self.labels) <= ALL_PAIRS_LIMIT:
            pool: Sequence[int] = range(len(self.labels))
        else:
            found: set[int] = set()
            for b, key in enumerate(self._bands(_minhash(sh))):
                found.update(self.buckets[b].get(key, ()))
            pool = sorted(found)
        best: Near | None = None
        for i in pool:
            s = jaccard(sh, self.sets[i])
            if s >= self.threshold and (best is None or s > best.similarity):
                best = Near(self.labels[i], round(s, 3))
        return best


# -- program gates -------------------------------------------------------------------------------------------
def quote_gate(c: Candidate, chunks: dict[str, Chunk]) -> dict[str, Any]:
    """Gate 2 (see the module's docstring)."""
    if not c.answerable:
        return {"passed": True, "applies": False}
    need = [ch.id for ch in c.slot.chunks]
    checks = []
    for cid in need:
        quotes = [q for qc, q in c.quotes if qc == cid]
        checker = EvidenceChecker({cid: chunks[cid].text}, strict=True)
        hit = None
        for q in quotes:
            qc = checker.check(q)
            ok = qc.found and (related(c.reference, q) or normalise(c.reference) in normalise(q))
            entry = {"chunk": cid, "quote": q, "found": qc.found, "match": round(qc.score, 1), "related": ok}
            if ok:
                hit = entry
                break
            hit = hit or entry
        checks.append(hit or {"chunk": cid, "quote": None, "found": False, "match": 0.0, "related": False})
    passed = all(e["found"] and e["related"] for e in checks)
    out: dict[str, Any] = {"passed": passed, "quotes": checks}
    if not passed:
        bad = next(e for e in checks if not (e["found"] and e["related"]))
        out["why"] = (f"no quote given from {bad['chunk']}" if bad["quote"] is None else
                      f"the quote is not text of {bad['chunk']}" if not bad["found"] else
                      "the quote does not bear on the reference")
    return out


def leak_gate(c: Candidate) -> dict[str, Any]:
    """Gate 3 (see the module's docstring)."""
    if not c.answerable:
        return {"passed": True, "applies": False}
    answer = content_words(c.reference)
    asked = content_words(c.input)
    if not answer:  # nothing to leak that a word measure can see: the normalised reference as text
        ref = normalise(c.reference)
        leaked = len(ref) >= 2 and f" {ref} " in f" {normalise(c.input)} "
        return {"passed": not leaked, "share": 1.0 if leaked else 0.0}
    share = len(answer & asked) / len(answer)
    out: dict[str, Any] = {"passed": share < 1.0, "share": round(share, 3)}
    if share >= 1.0:
        out["why"] = "every content word of the reference is in the input"
    return out


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?。！？])\s*|\n+", text) if s.strip()]


def answerable_prefilter(question: str, chunks: Sequence[Chunk]) -> tuple[bool, float]:
    """Whether one sentence of the documents holds :data:`ANSWERABLE_SHARE` of the question's content words."""
    want = content_words(question)
    if not want:
        return False, 0.0
    best = 0.0
    for ch in chunks:
        for s in _sentences(ch.text):
            best = max(best, len(want & content_words(s)) / len(want))
    return best >= ANSWERABLE_SHARE, round(best, 3)


def closest_chunks(question: str, chunks: Sequence[Chunk], k: int = 3) -> list[Chunk]:
    want = content_words(question)
    scored = sorted(chunks, key=lambda ch: (-len(want & content_words(ch.text)), ch.id))
    return scored[:k]


# -- judge gates ---------------------------------------------------------------------------------------------
CRITIC_SYSTEM = system_prompt(
    "You review generated test cases for a question-answering assistant before they enter a test suite. You are "
    "strict: a case that is unclear, unrealistic or whose reference answer is wrong or incomplete must not pass.")
ANSWERABLE_SYSTEM = system_prompt(
    "You check whether a question can be answered from given document chunks alone.")


def _bool(v: Any, what: str) -> bool:
    if not isinstance(v, bool):
        raise ReplyInvalid(f"{what} must be true or false")
    return v


def critic_request(c: Candidate, chunks: dict[str, Chunk], *, max_tokens: int, seed: int | None) -> Any:
    texts = [c.input, c.reference, *(chunks[ch.id].text for ch in c.slot.chunks)]
    nonce = make_nonce(*texts)
    persona = f" asked by this persona: {c.slot.persona}" if c.slot.persona else ""
    prompt = "\n\n".join([
        f"Score this generated test case from 1 to 5. It should be a {c.slot.kind.replace('_', '-')} question"
        f"{persona}. 5: a clear question a real user would ask, and a reference answer that is correct and "
        "complete by the chunks. 3: usable with small flaws. 1: unclear, unrealistic, wrong or not the kind asked "
        "for.",
        "The question:\n" + data_block("question", c.input, nonce),
        "The reference answer:\n" + data_block("reference", c.reference, nonce),
        "The source chunks:\n" + "\n".join(data_block("chunk", chunks[ch.id].text, nonce, f' label="{ch.id}"')
                                         for ch in c.slot.chunks),
        'Reply with only this JSON object: {"score": 1-5, "reason": "..."}',
    ])
    schema = {"type": "object", "title": CRITIC_SCHEMA,
              "properties": {"score": {"type": "number"}, "reason": {"type": "string"}},
              "required": ["score", "reason"], "additionalProperties": False}
    return judge_request(CRITIC_SYSTEM, prompt, texts, response_schema=schema, schema_name=CRITIC_SCHEMA,
                         max_tokens=max_tokens, temperature=0.0, seed=seed)


def _critic(obj: dict[str, Any]) -> tuple[float, str]:
    s = as_number(obj.get("score"), "score")
    if not 1 <= s <= 5:
        raise ReplyInvalid(f"score is {s}, expected 1 to 5")
    reason = obj.get("reason")
    return s, reason[:500] if isinstance(reason, str) else ""


async def critic_gate(client: JudgeClient, c: Candidate, chunks: dict[str, Chunk], *, threshold: float,
                      max_tokens: int, seed: int | None, use_cache: bool) -> tuple[dict[str, Any], float | None]:
    out = await ask_judge(client, critic_request(c, chunks, max_tokens=max_tokens, seed=seed),
                          lambda t: parse_verdict(t, _critic), use_cache=use_cache)
    if out.status != "scored" or out.value is None:
        return {"passed": False, "why": f"the critic could not score it ({out.error})"}, out.cost_usd
    score, reason = out.value
    res: dict[str, Any] = {"passed": score >= threshold, "score": score, "threshold": threshold, "reason": reason}
    if score < threshold:
        res["why"] = f"critic score {score:g} below {threshold:g}"
    return res, out.cost_usd


def answerable_request(c: Candidate, shown: Sequence[Chunk], *, max_tokens: int, seed: int | None) -> Any:
    texts = [c.input, *(ch.text for ch in shown)]
    nonce = make_nonce(*texts)
    prompt = "\n\n".join([
        "Can the question below be answered from these document chunks alone (no outside knowledge)?",
        "The question:\n" + data_block("question", c.input, nonce),
        "The chunks:\n" + "\n".join(data_block("chunk", ch.text, nonce, f' label="{ch.id}"') for ch in shown),
        'Reply with only this JSON object: {"answerable": true or false, "reason": "..."}',
    ])
    schema = {"type": "object", "title": ANSWERABLE_SCHEMA,
              "properties": {"answerable": {"type": "boolean"}, "reason": {"type": "string"}},
              "required": ["answerable", "reason"], "additionalProperties": False}
    return judge_request(ANSWERABLE_SYSTEM, prompt, texts, response_schema=schema, schema_name=ANSWERABLE_SCHEMA,
                         max_tokens=max_tokens, temperature=0.0, seed=seed)


async def unanswerable_gate(client: JudgeClient, c: Candidate, chunks: Sequence[Chunk], *, max_tokens: int,
                            seed: int | None, use_cache: bool) -> tuple[dict[str, Any], float | None]:
    if c.answerable:
        return {"passed": True, "applies": False}, None
    hit, share = answerable_prefilter(c.input, chunks)
    if hit:
        return {"passed": False, "prefilter": share, "why": "a sentence of the documents holds the question's words"}, None
    shown = list(dict.fromkeys([*c.slot.chunks, *closest_chunks(c.input, chunks)]))
    out = await ask_judge(client, answerable_request(c, shown, max_tokens=max_tokens, seed=seed),
                          lambda t: parse_verdict(t, lambda o: _bool(o.get("answerable"), "answerable")),
                          use_cache=use_cache)
    if out.status != "scored" or out.value is None:
        return {"passed": False, "prefilter": share, "why": f"the judge could not decide ({out.error})"}, out.cost_usd
    res: dict[str, Any] = {"passed": not out.value, "prefilter": share, "judge_answerable": out.value,
                           "shown": [ch.id for ch in shown]}
    if out.value:
        res["why"] = "the judge found the answer in the documents"
    return res, out.cost_usd
