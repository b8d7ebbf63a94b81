"""The stand-in's replies to ``referee synth``'s three requests (cases, critic, answerable): plausible, deterministic,
and NOT a model, so ``referee synth --provider standin`` runs with no key.

* **cases**: for each slot, a sentence of its chunk (chosen by a digest of the slot) becomes the reference and its
  quote, and the question asks what the documents say about the sentence's first content words ("As a <persona>:"
  in front when a persona is given). Two-chunk kinds take a sentence of each chunk; an unanswerable slot asks about
  its chunk's subject somewhere the documents never go;
* **critic**: 5 when the reference's content words are in the chunks (at least 60%), 4 for an unanswerable case
  phrased as a question, else 2;
* **answerable**: true when one sentence of the chunks holds at least 60% of the question's content words.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

SCHEMAS = ("referee_synth_cases", "referee_synth_critic", "referee_synth_answerable")
SHARE = 0.6
UNANSWERABLE = "The documents do not answer this question."

_BLOCK = re.compile(r"<((?:slots|chunk|question|reference)-[0-9a-f]{12})((?:\s[^<>]*)?)>\n?(.*?)\n?</\1>",
                    re.DOTALL)
_LABEL = re.compile(r'label="([^"]+)"')
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s*|\n+")
_GENERIC = frozenset({"documents", "document", "say", "says", "what", "how", "does", "true", "nothing",
                      "compare", "bear", "persona"})


def is_synth_schema(schema: Mapping[str, Any] | None) -> bool:
    return schema is not None and schema.get("title") in SCHEMAS


def _plain(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">")


def _blocks(prompt: str) -> list[tuple[str, str, str]]:
    out = []
    for m in _BLOCK.finditer(prompt):
        label = _LABEL.search(m.group(2) or "")
        out.append((m.group(1).rsplit("-", 1)[0], label.group(1) if label else "", _plain(m.group(3))))
    return out


def _sentences(text: str) -> list[str]:
    out = []
    for s in _SENTENCE.split(text):
        s = s.strip()
        if s and not s.startswith("#") and not s.lower().startswith("example question:"):
            out.append(s)
    return out


def _pick(sentences: list[str], key: str, tokens: Callable[[str], list[str]]) -> str | None:
    rich = [s for s in sentences if len(tokens(s)) >= 5] or [s for s in sentences if tokens(s)]
    if not rich:
        return None
    return rich[int(hashlib.sha256(key.encode()).hexdigest(), 16) % len(rich)]


def _subject(sentence: str, tokens: Callable[[str], list[str]]) -> str:
    words = [w for w in tokens(sentence) if not w.isdigit()]
    return " ".join(words[:3]) or sentence.split()[0]


def _case(slot: str, chunks: Mapping[str, str], tokens: Callable[[str], list[str]]) -> dict[str, Any] | None:
    parts = [p.strip() for p in slot.split("|")]
    if len(parts) < 3 or not parts[0].isdigit():
        return None
    n, kind = int(parts[0]), parts[1]
    labels = [x.strip() for x in parts[2].removeprefix("chunks:").split(",") if x.strip() in chunks]
    persona = next((p.removeprefix("persona:").strip() for p in parts[3:] if p.startswith("persona:")), "")
    if not labels:
        return None
    picked = [_pick(_sentences(chunks[lb]), f"{slot}:{lb}", tokens) for lb in labels]
    if any(p is None for p in picked):
        return None
    sents = [p for p in picked if p is not None]
    subj = [_subject(s, tokens) for s in sents]
    quotes = [{"chunk": lb, "quote": s} for lb, s in zip(labels, sents, strict=True)]
    if kind == "unanswerable":
        q, ref, quotes = f"What do the documents say about {subj[0]} on the planet Neptune in the year 2999?", \
            UNANSWERABLE, []
    elif kind in ("multi_hop", "comparison") and len(sents) > 1:
        q = (f"What do the documents say about {subj[0]}, and how does it bear on {subj[1]}?"
             if kind == "multi_hop" else f"How does {subj[0]} compare with {subj[1]}?")
        ref = f"{sents[0]} {sents[1]}"
    elif kind == "adversarial":
        q, ref, quotes = (f"Is it true that the documents say nothing about {subj[0]}? What do they say?",
                          sents[0], quotes[:1])
    else:
        q, ref, quotes = f"What do the documents say about {subj[0]}?", sents[0], quotes[:1]
    if persona:
        q = f"As a {persona}: {q}"
    return {"slot": n, "input": q, "reference": ref, "quotes": quotes}


def _share(want: set[str], text: str, tokens: Callable[[str], list[str]]) -> float:
    if not want:
        return 0.0
    return max((len(want & set(tokens(s))) / len(want) for s in _sentences(text)), default=0.0)


def synth_reply(prompt: str, schema: Mapping[str, Any], *, tokens: Callable[[str], list[str]]) -> str:
    """The stand-in's reply to one of ``referee synth``'s requests (``schema``'s title says which)."""
    blocks = _blocks(prompt)
    chunks = {label: text for name, label, text in blocks if name == "chunk"}
    title = schema.get("title")
    if title == "referee_synth_cases":
        slots = next((t for n, _, t in blocks if n == "slots"), "")
        cases = [c for line in slots.splitlines() if (c := _case(line, chunks, tokens)) is not None]
        return json.dumps({"cases": cases})
    question = next((t for n, _, t in blocks if n == "question"), "")
    want = {w for w in tokens(question) if w not in _GENERIC}
    if title == "referee_synth_answerable":
        share = max((_share(want, t, tokens) for t in chunks.values()), default=0.0)
        return json.dumps({"answerable": share >= SHARE,
                           "reason": f"stand-in judge: {share:.0%} of the question's words in one sentence"})
    reference = next((t for n, _, t in blocks if n == "reference"), "")
    ref_words = set(tokens(reference))
    if reference.strip() == UNANSWERABLE:
        score = 4 if question.strip().endswith("?") else 2
    else:
        have = set(tokens(" ".join(chunks.values())))
        score = 5 if ref_words and len(ref_words & have) / len(ref_words) >= SHARE else 2
    return json.dumps({"score": score, "reason": f"stand-in judge: score {score} from word overlap"})
