"""The claims table of a row judged by the claim-level RAG metrics, for the HTML report and the viewer's case page
(``claims`` in ``GET /api/runs/<run>/cases/<row>``): each claim with its verdict, each quote, the chunk it names,
whether the quote was found, and the chunk's text split around the quote so the quote can be marked. Segments are
plain strings: the report's template escapes each one, the viewer makes each one a text node."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..cases._case import Case
from ..cases._contexts import chunks_of
from ..evaluators._evidence import Locator

MAX_CLAIM_ROWS = 500
"""Claims listed per case over all its metrics: the rest are counted, not sent."""
MAX_SUPPORTS = 1000
"""Quotes listed per case (each with its chunk's text): the rest are counted, not sent."""
WINDOW = 600
"""Characters of chunk text shown either side of a quote (a 10 KB chunk is cut around the quote)."""
MAX_TEXT = 4 * WINDOW
"""A chunk shorter than this is shown whole."""


def _metric_details(details: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    if isinstance(details.get("claims"), list):
        return [(str(details.get("metric") or ""), details)]
    checks = details.get("checks")
    if not isinstance(checks, Mapping):
        return []
    return [(str(k), v) for k, v in checks.items() if isinstance(v, Mapping) and isinstance(v.get("claims"), list)]


def _passages(case: Case | None) -> dict[str, tuple[str, int | None, str | None]]:
    """Passage label -> (text, rank, source): the case's chunks, and its reference and answer (the labels the
    metrics give them)."""
    if case is None:
        return {}
    out: dict[str, tuple[str, int | None, str | None]] = {c.id: (c.text, c.rank, c.source)
                                                          for c in chunks_of(case.get("contexts"))}
    for label, value in (("reference", case.get("reference")), ("answer", case.output)):
        if isinstance(value, str) and label not in out:
            out[label] = (value, None, None)
    return out


def _segments(text: str, locator: Locator, quote: str, found: bool) -> list[dict[str, Any]]:
    """``text`` as [{text, mark}] with the quote's matches marked (only a found quote is marked: a quote that was
    not found must not look like evidence), cut to a window around the first match when the text is long. Only
    the window is sliced: a quote costs the same in a 2 MB chunk as in a 2 kB one."""
    spans = sorted(locator.spans(quote)) if found and quote else []
    lo, hi = 0, len(text)
    if len(text) > MAX_TEXT:
        first = spans[0][0] if spans else 0
        lo, hi = max(0, first - WINDOW), min(len(text), first + (len(quote) if spans else 0) + WINDOW)
    out: list[dict[str, Any]] = [{"text": "...", "mark": False}] if lo > 0 else []
    pos = lo
    for s, e in spans:
        s, e = max(s, pos), min(e, hi)
        if e <= s:
            continue
        if s > pos:
            out.append({"text": text[pos:s], "mark": False})
        out.append({"text": text[s:e], "mark": True})
        pos = e
    if pos < hi or not out:
        out.append({"text": text[pos:hi], "mark": False})
    if hi < len(text):
        out.append({"text": "...", "mark": False})
    return out


def _verdict(claim: Mapping[str, Any], against: str) -> str:
    chk = (claim.get("checks") or {}).get(against)
    if not isinstance(chk, Mapping) or chk.get("supported") is None:
        return "not checked"
    return "supported" if chk["supported"] else "unsupported"


def claims_table(details: Mapping[str, Any], case: Case | None) -> dict[str, Any] | None:
    """The claims of every claim-level metric in ``details``, or None when the row has none."""
    metrics = _metric_details(details)
    if not metrics:
        return None
    passages = _passages(case)
    locators: dict[str, Locator] = {}  # each passage normalised once, however many quotes cite it
    rows: list[dict[str, Any]] = []
    total = quotes = 0
    for metric, det in metrics:
        for c in det["claims"]:
            if not isinstance(c, Mapping):
                continue
            total += 1
            if len(rows) >= MAX_CLAIM_ROWS:
                continue
            base = {"metric": metric, "id": str(c.get("id") or ""), "of": str(c.get("of") or ""),
                    "text": str(c.get("text") or "")}
            if "relevant" in c and "checks" not in c:  # answer relevancy: a verdict on the question, no quote
                rows.append({**base, "against": "question", "verdict": "relevant" if c["relevant"] is True
                             else "not relevant" if c["relevant"] is False else "not checked", "supports": []})
                continue
            raw = c.get("checks")
            checks: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
            if not checks:
                rows.append({**base, "against": "", "verdict": "not checked", "supports": []})
            for against, chk in checks.items():
                sups = chk.get("supports") if isinstance(chk, Mapping) else None
                out = []
                for s in sups if isinstance(sups, list) else []:
                    if not isinstance(s, Mapping):
                        continue
                    quotes += 1
                    if quotes > MAX_SUPPORTS:
                        continue
                    label, quote, found = str(s.get("passage") or ""), str(s.get("quote") or ""), s.get("found")
                    p = passages.get(label)
                    out.append({"passage": label, "quote": quote, "found": found is True,
                                "related": s.get("related"), "problem": s.get("problem"),
                                "rank": None if p is None else p[1], "source": None if p is None else p[2],
                                "segments": None if p is None else _segments(
                                    p[0], locators.get(label) or locators.setdefault(label, Locator(p[0])), quote,
                                    found is True)})
                rows.append({**base, "against": str(against), "verdict": _verdict(c, str(against)), "supports": out})
    return {"rows": rows, "total": total, "quotes": quotes, "max_quotes": MAX_SUPPORTS, "has_case": case is not None}
