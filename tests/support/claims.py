"""A scripted claims judge for the claim-level RAG metrics: it answers the three requests (claims, support,
relevance) from tables a test writes by hand, reading the request's delimited blocks as the metrics build them."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from referee.providers._standin_claims import _blocks, _claims, _plain
from referee.testing._wire import WireRequest


@dataclass
class ClaimsJudge:
    """``claims``: text -> its claims; ``supports``: claim -> [(a piece of the passage it is cited from, quote)];
    ``relevant``: the claims that address the question; ``override``: schema title -> a fixed reply."""

    claims: Mapping[str, Sequence[str]] = field(default_factory=dict)
    supports: Mapping[str, Sequence[tuple[str, str]]] = field(default_factory=dict)
    relevant: set[str] = field(default_factory=set)
    override: dict[str, Callable[[str], str] | str] = field(default_factory=dict)
    seen: list[str] = field(default_factory=list)
    """The schema title of every request served, in order."""

    def __call__(self, req: WireRequest) -> str:
        schema = req.schema or {}
        title = str(schema.get("title", ""))
        self.seen.append(title)
        prompt = req.prompt_text
        if title in self.override:
            o = self.override[title]
            return o(prompt) if callable(o) else o
        blocks = _blocks(prompt)
        if title == "referee_claims":
            text = next(_plain(t) for n, _, t in blocks if n == "text")
            return json.dumps({"claims": list(self.claims.get(text, []))})
        claims = next((_claims(t) for n, _, t in blocks if n == "claims"), [])
        if title == "referee_claim_relevance":
            return json.dumps({"verdicts": {cid: text in self.relevant for cid, text in claims}})
        passages = [(label, _plain(t)) for n, label, t in blocks if n == "passage"]
        out: dict[str, list[dict[str, str]]] = {}
        for cid, text in claims:
            out[cid] = [{"passage": label, "quote": quote} for piece, quote in self.supports.get(text, [])
                        for label, body in passages if piece in body]
        return json.dumps({"verdicts": out})

    def count(self, title: str) -> int:
        return sum(1 for t in self.seen if t == title)


def judge_for(server: Any) -> Any:
    """A judge over the real OpenAI-compatible HTTP client pointed at ``server`` (no cache)."""
    from referee import Judge

    return Judge("openai:gpt-test", base_url=server.url + "/v1", cache=False)
