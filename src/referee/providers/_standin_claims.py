"""The stand-in judge's replies to the claim-level RAG metrics' three requests (claims, support, relevance): plausible
and deterministic, and NOT a model.

* **claims**: one claim per sentence of the text (questions and refusals left out; a refusal has none);
* **support**: a passage supports a claim when one of its sentences holds at least 60% of the claim's content words
  (numbers must match); the quote is that sentence, copied from the passage;
* **relevance**: a claim addresses the question when it shares a content word with it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

SCHEMAS = ("referee_claims", "referee_claim_support", "referee_claim_relevance")
SUPPORT_SHARE = 0.6

_BLOCK = re.compile(r"<((?:text|question|claims|passage)-[0-9a-f]{12})((?:\s[^<>]*)?)>\n?(.*?)\n?</\1>", re.DOTALL)
_LABEL = re.compile(r'label="(P\d+)"')
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def is_claims_schema(schema: Mapping[str, Any] | None) -> bool:
    return schema is not None and schema.get("title") in SCHEMAS


def _plain(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def _blocks(prompt: str) -> list[tuple[str, str, str]]:
    """(name, label, text) of the claim prompts' blocks, in order."""
    out = []
    for m in _BLOCK.finditer(prompt):
        label = _LABEL.search(m.group(2) or "")
        out.append((m.group(1).rsplit("-", 1)[0], label.group(1) if label else "", m.group(3)))
    return out


def _claims(block: str) -> list[tuple[str, str]]:
    out = []
    for line in _plain(block).splitlines():
        cid, sep, text = line.partition(": ")
        if sep and re.fullmatch(r"[ar]\d+", cid):
            out.append((cid, text))
    return out


def claims_reply(prompt: str, schema: Mapping[str, Any], *, tokens: Callable[[str], list[str]],
                 is_refusal: Callable[[str], bool]) -> str:
    """The stand-in's reply to one of the claim metrics' requests (``schema``'s title says which), with the
    stand-in's content words and refusal rule (:mod:`._standin` passes its own)."""
    blocks = _blocks(prompt)
    title = schema.get("title")
    if title == "referee_claims":
        text = next((_plain(t) for n, _, t in blocks if n == "text"), "")
        limit = int(schema.get("properties", {}).get("claims", {}).get("maxItems", 64))
        if is_refusal(text):
            return json.dumps({"claims": []})
        found = [s for s in _sentences(text) if not s.endswith("?") and tokens(s) and not is_refusal(s)]
        return json.dumps({"claims": found[:limit]})
    claims: list[tuple[str, str]] = next((_claims(t) for n, _, t in blocks if n == "claims"), [])
    if title == "referee_claim_relevance":
        q = set(tokens(next((_plain(t) for n, _, t in blocks if n == "question"), "")))
        return json.dumps({"verdicts": {cid: bool(q & set(tokens(text))) for cid, text in claims}})
    passages = [(label, _plain(t)) for n, label, t in blocks if n == "passage"]
    verdicts: dict[str, list[dict[str, str]]] = {}
    for cid, text in claims:
        want = set(tokens(text))
        nums = set(re.findall(r"\d+", text))
        cited: list[dict[str, str]] = []
        for label, body in passages:
            best, share = None, 0.0
            for s in _sentences(body):
                have = set(tokens(s))
                sh = len(want & have) / len(want) if want else 0.0
                if sh > share and nums <= set(re.findall(r"\d+", s)):
                    best, share = s, sh
            if best is not None and share >= SUPPORT_SHARE:
                cited.append({"passage": label, "quote": best})
        verdicts[cid] = cited
    return json.dumps({"verdicts": verdicts})
