"""Evidence verification: is every quote a judge cites really in the judged text (or the gold / context)?

Both sides are normalised first: Unicode NFKC, case-folded, every kind of quote mark removed (judges wrap,
straighten or curl them), dashes unified, whitespace runs collapsed to one space. A quote is found when

* its normalised form is a substring of a source, or
* ``rapidfuzz.fuzz.partial_ratio`` (best-matching window) reaches :data:`MATCH_THRESHOLD` (90 of 100): a
  couple of typos or a dropped word in a long quote still match, a paraphrase does not. A near match must
  keep the window's numbers and its count of negations (``not``, ``never``, ``don't``, ...): "older than 60
  days" or a dropped "not" is a different claim, not a typo. A quote longer than a source must match the
  whole source (``ratio``), or "the whole short output plus invented words" would score 100.

A quote with an ellipsis (``...`` / ``…``) is split at it and every fragment must be found, in order-free
fashion, in the same source (rubric and gold evidence; claim support is stricter, see below). Quotes shorter
than :data:`MIN_FUZZY_CHARS` after normalisation must match exactly (fuzzy matching on 3 letters finds them
anywhere). A ``file:line`` or ``file:line-line`` reference (the rubric allows them) is found when a source of that
file name has that many lines.

**Strict matching** (``EvidenceChecker(..., strict=True)``: the support quotes of the claim-level RAG metrics and
any other quote that must be text of its source): a quote must be text of the source, nothing else. A ``file:line`` reference
is only text there, and an ellipsis joins fragments that stand **in the quote's order**, each within
:data:`MAX_ELIDED_CHARS` of the one before, with nothing of meaning elided between them (no number, no negation):
"Refunds are ... issued for gift cards" is not found in "Refunds are not issued for gift cards".

An image has no text to quote: evidence about one is a region description, ``image: the red bar at the top
left`` (:data:`REGION_PREFIX`), recorded as such (``kind="region"``) and never checked against text; it counts
neither for nor against grounding. A text quote is checked against the text only (an image's marker is no text).
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from rapidfuzz import fuzz

from .._util._image import has_marker, strip_markers

REGION_PREFIX = "image:"
"""How evidence about an image starts: the rest describes a region of it (not checked against text)."""
MATCH_THRESHOLD = 90.0
MIN_FUZZY_CHARS = 12
MAX_ELIDED_CHARS = 240
"""Strict matching: the most normalised characters an ellipsis may stand for between two fragments."""
_MAX_STARTS = 256
"""Strict matching: places of a quote's first fragment tried at most (a fragment repeated more often than that is
too common to anchor an elided quote)."""

_QUOTES = set("\"'`´‘’‚‛“”„‟«»‹›")
_DASHES = set("‐‑‒–—―−")
_ELLIPSIS_RE = re.compile(r"\s*(?:\.\.\.+|…|\[\.\.\.\])\s*")
_FILE_LINE_RE = re.compile(r"^\s*`?(?P<path>[\w./\\-]+\.[\w]+):(?P<a>\d+)(?:-(?P<b>\d+))?`?\s*$")


def normalise_with_map(text: str) -> tuple[str, Sequence[int]]:
    """The normalised text and, for each of its characters, the index of the source character it came from
    (so a match can be highlighted in the original text).

    Vectorised over the text's code points (numpy): each distinct character's NFKC case-folded form is computed
    once, however often it occurs, and the quote removal, dash unifying and whitespace collapsing are array
    operations. The same result as going character by character, in a fraction of the time (a 1.9 MB chunk in
    well under a second rather than ~10 s), so a text with a thousand quotes to place is cheap to normalise."""
    if len(text) < _VECTOR_MIN:
        return _normalise_chars(text)
    import numpy as np

    cp = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    # Each distinct character's units (tables indexed by code point: no sort, linear in the text): its NFKC
    # case-folded form without quote marks, dashes as "-", and which of its units are whitespace.
    distinct = np.flatnonzero(np.bincount(cp))
    forms: list[list[int]] = []
    for code in distinct.tolist():
        form = unicodedata.normalize("NFKC", chr(code)).casefold()
        forms.append([ord("-") if c in _DASHES else ord(c) for c in form if c not in _QUOTES])
    size = int(distinct[-1]) + 1
    length_of = np.zeros(size, dtype=np.int64)
    length_of[distinct] = [len(f) for f in forms]
    per_char = length_of[cp]
    if int(per_char.max()) <= 1:  # every character is one unit or none (no ligature, no ellipsis): no expansion
        unit_of = np.zeros(size, dtype=np.uint32)
        unit_of[distinct] = [f[0] if f else 0 for f in forms]
        source = np.flatnonzero(per_char)
        units = unit_of[cp[source]]
    else:
        flat = np.array([u for f in forms for u in f] or [0], dtype=np.uint32)
        start_of = np.zeros(size, dtype=np.int64)
        start_of[distinct] = np.concatenate(([0], np.cumsum(length_of[distinct])[:-1]))
        source = np.repeat(np.arange(len(cp), dtype=np.int64), per_char)  # each unit's source character
        first_unit = np.cumsum(per_char) - per_char
        units = flat[start_of[cp[source]] + np.arange(len(source), dtype=np.int64) - first_unit[source]]
    if not len(units):
        return "", []
    unit_codes = np.flatnonzero(np.bincount(units))
    is_space = np.zeros(int(unit_codes[-1]) + 1, dtype=bool)
    is_space[unit_codes] = [chr(u).isspace() for u in unit_codes.tolist()]
    space = is_space[units]
    keep = np.flatnonzero(~space)
    if not len(keep):
        return "", []
    # A space before a kept unit when whitespace stood between it and the kept unit before it (none first).
    spaces_so_far = np.cumsum(space)
    gap = np.zeros(len(keep), dtype=np.int64)
    gap[1:] = spaces_so_far[keep[1:]] > spaces_so_far[keep[:-1]]
    out_units = np.repeat(units[keep], 1 + gap)
    out_source = np.repeat(source[keep], 1 + gap)
    space_at = np.flatnonzero(gap) + np.arange(int(gap.sum()))  # where each inserted space lands
    out_units[space_at] = ord(" ")
    return out_units.astype("<u4").tobytes().decode("utf-32-le", "surrogatepass"), cast("Sequence[int]", out_source)


_VECTOR_MIN = 512
"""Texts shorter than this (quotes, most outputs) are normalised character by character: array set-up costs more."""


def _normalise_chars(text: str) -> tuple[str, list[int]]:
    """:func:`normalise_with_map` character by character (the definition the vectorised form reproduces)."""
    out: list[str] = []
    idx: list[int] = []
    pending_space = False
    for i, ch in enumerate(text):
        for c in unicodedata.normalize("NFKC", ch).casefold():
            if c in _QUOTES:
                continue
            if c in _DASHES:
                c = "-"
            if c.isspace():
                pending_space = bool(out)
                continue
            if pending_space:
                out.append(" ")
                idx.append(i)
                pending_space = False
            out.append(c)
            idx.append(i)
    return "".join(out), idx


def normalise(text: str) -> str:
    return normalise_with_map(text)[0]


@dataclass(frozen=True)
class QuoteCheck:
    quote: str
    found: bool
    source: str | None = None
    """Name of the source it was found in."""
    score: float = 0.0
    """Best match score 0-100."""
    kind: str = "text"
    """``text``: a quote checked against the sources; ``region``: a description of part of an image, not
    checked (there is no text to check it against)."""


def _fragments(quote: str) -> list[str]:
    parts = [normalise(p) for p in _ELLIPSIS_RE.split(quote)]
    return [p for p in parts if p]


_NUMBER_RE = re.compile(r"\d+(?:[.,:/]\d+)*")
_WORD_RE = re.compile(r"\w+")
# Quote marks are removed by normalisation, so "don't" is compared as "dont".
_NEGATIONS = frozenset(
    "not no never none nor neither nothing nobody nowhere cannot without dont doesnt didnt isnt arent wasnt "
    "werent cant couldnt wont wouldnt shouldnt hasnt havent hadnt mustnt neednt aint".split())


def _meaning_marks(text: str) -> tuple[list[str], int]:
    """What a near match must not change: the numbers, and how many negations there are."""
    return sorted(_NUMBER_RE.findall(text)), sum(w in _NEGATIONS for w in _WORD_RE.findall(text))


def _word_window(text: str, start: int, end: int) -> str:
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    while end < len(text) and not text[end].isspace():
        end += 1
    return text[start:end]


def _match(fragment: str, text: str) -> float:
    if fragment in text:
        return 100.0
    if len(fragment) < MIN_FUZZY_CHARS:
        return 0.0
    if len(fragment) > len(text):
        # partial_ratio slides the *shorter* string over the longer one: a quote holding the whole source
        # plus invented words would score 100. A quote longer than the source must match it as a whole.
        score, window = fuzz.ratio(fragment, text, score_cutoff=MATCH_THRESHOLD), text
    else:
        al = fuzz.partial_ratio_alignment(fragment, text, score_cutoff=MATCH_THRESHOLD)
        if al is None:
            return 0.0
        score, window = al.score, _word_window(text, al.dest_start, al.dest_end)
    # A typo or a dropped word is tolerated; a changed number or a dropped "not" changes what the text says.
    if score and _meaning_marks(fragment) != _meaning_marks(window):
        return 0.0
    return float(score)


def _file_line(quote: str, raw_sources: Mapping[str, str]) -> QuoteCheck | None:
    m = _FILE_LINE_RE.match(quote)
    if not m:
        return None
    path = m.group("path").replace("\\", "/")
    last = int(m.group("b") or m.group("a"))
    for name, text in raw_sources.items():
        n = name.replace("\\", "/")
        if n == path or n.endswith("/" + path) or path.endswith("/" + n.rsplit("/", 1)[-1]) \
                or n.rsplit("/", 1)[-1] == path:
            ok = 1 <= int(m.group("a")) <= last <= text.count("\n") + 1
            return QuoteCheck(quote, ok, name, 100.0 if ok else 0.0)
    return QuoteCheck(quote, False, None, 0.0)


def _find(fragment: str, text: str, start: int, stop: int) -> tuple[int, int, float] | None:
    """Where ``fragment`` sits in ``text[start:stop]``: exactly, else a near match under :func:`_match`'s rules."""
    pos = text.find(fragment, start, stop)
    if pos >= 0:
        return pos, pos + len(fragment), 100.0
    window = text[start:stop]
    if len(fragment) < MIN_FUZZY_CHARS or len(fragment) > len(window):
        return None
    al = fuzz.partial_ratio_alignment(fragment, window, score_cutoff=MATCH_THRESHOLD)
    if al is None or _meaning_marks(fragment) != _meaning_marks(_word_window(window, al.dest_start, al.dest_end)):
        return None
    return start + al.dest_start, start + al.dest_end, float(al.score)


def _elision_keeps_meaning(skipped: str) -> bool:
    marks = _meaning_marks(skipped)
    return not marks[0] and not marks[1]


def _strict_match(frags: list[str], text: str) -> float:
    """The worst fragment score when the fragments stand in order in ``text``, each gap at most
    :data:`MAX_ELIDED_CHARS` and free of numbers and negations; 0 otherwise."""
    if len(frags) == 1:
        return _match(frags[0], text)
    first, rest = frags[0], frags[1:]
    starts: list[tuple[int, int, float]] = []
    pos = text.find(first)
    while pos >= 0 and len(starts) < _MAX_STARTS:
        starts.append((pos, pos + len(first), 100.0))
        pos = text.find(first, pos + 1)
    if not starts:
        near = _find(first, text, 0, len(text))
        starts = [near] if near else []
    for _, end, score in starts:
        worst = score
        for frag in rest:
            hit = _find(frag, text, end, min(len(text), end + MAX_ELIDED_CHARS + len(frag) + 1))
            if hit is None or not _elision_keeps_meaning(text[end:hit[0]]):
                break
            end, worst = hit[1], min(worst, hit[2])
        else:
            return worst
    return 0.0


class EvidenceChecker:
    """Checks quotes against named sources; normalises each source once. ``strict``: text of the source only,
    ellipsis fragments in order with nothing of meaning elided (see the module's docstring)."""

    def __init__(self, sources: Mapping[str, str], *, strict: bool = False) -> None:
        self.strict = strict
        self.images = [k for k, v in sources.items() if v and has_marker(v)]
        """The sources holding images (where region evidence can point)."""
        self.raw = {k: strip_markers(v) for k, v in sources.items() if v}
        self.raw = {k: v for k, v in self.raw.items() if v.strip()}
        self.norm = {k: normalise(v) for k, v in self.raw.items()}

    def check(self, quote: str) -> QuoteCheck:
        if self.images and quote.strip().casefold().startswith(REGION_PREFIX):
            return QuoteCheck(quote, True, self.images[0], 0.0, kind="region")
        if "&lt;" in quote or "&gt;" in quote:
            # The judge saw tag-like case text escaped by prompt_guard.neutralise: its quote of that text is
            # checked as the original reads.
            plain = self.check(quote.replace("&lt;", "<").replace("&gt;", ">"))
            if plain.found:
                return dataclasses.replace(plain, quote=quote)
        ref = None if self.strict else _file_line(quote, self.raw)
        if ref is not None and ref.found:
            return ref
        # Not a resolvable file:line reference: it may still be text of a source (``db.example.com:5432``,
        # an output that itself cites ``main.py:12``).
        frags = _fragments(quote)
        if not frags:
            return ref or QuoteCheck(quote, False)
        best = ref or QuoteCheck(quote, False)
        for name, text in self.norm.items():
            worst = _strict_match(frags, text) if self.strict else min(_match(f, text) for f in frags)
            if worst >= MATCH_THRESHOLD:
                return QuoteCheck(quote, True, name, worst)
            if worst > best.score:
                best = QuoteCheck(quote, False, name, worst)
        return best

    def check_all(self, quotes: list[str]) -> list[QuoteCheck]:
        return [self.check(q) for q in quotes]


def grounded(checks: list[QuoteCheck]) -> bool | None:
    """True when every quote was found; None when there was nothing to verify (region descriptions of an image
    are not verified)."""
    quotes = [c for c in checks if c.kind == "text"]
    if not quotes:
        return None
    return all(c.found for c in quotes)


def ungrounded_counts(rows: Iterable[Any]) -> dict[str, int]:
    """Per criterion id, how many result rows cite evidence for it that was not found."""
    counts: dict[str, int] = {}
    for r in rows:
        for c in r.criteria:
            if c.grounded is False:
                counts[c.id] = counts.get(c.id, 0) + 1
    return counts


def describe_ungrounded(rows: Iterable[Any]) -> str | None:
    """One line counting, per criterion, the rows whose evidence was not found in the judged text (None: all
    found)."""
    counts = ungrounded_counts(rows)
    if not counts:
        return None
    return "ungrounded evidence per criterion: " + ", ".join(f"{k} {v}" for k, v in counts.items())


class Locator:
    """Where quotes sit in one text, for highlighting: the text is normalised once, however many quotes are
    located in it (the claims table marks up to 1,000 quotes in a chunk of up to megabytes).

    A fragment found as written costs one substring search. One that is not (a near match the checker accepted)
    is searched for near the places where a piece of it stands as written (its halves, then its quarters: a
    near match differs in a few characters, so some piece is intact), never over the whole text: at most
    :data:`ANCHOR_PLACES` windows per piece, each a few times the fragment's length, so a quote's cost does not
    grow with the text's. A near match with no intact piece is left unmarked (it was checked when judged; the
    mark only shows where it sits)."""

    ANCHOR_PLACES = 4
    """Places of one piece tried at most."""

    def __init__(self, text: str) -> None:
        self.norm, self.idx = normalise_with_map(text)

    def spans(self, quote: str) -> list[tuple[int, int]]:
        """Where the fragments of ``quote`` sit in the original text (start, end)."""
        spans: list[tuple[int, int]] = []
        for frag in _fragments(quote):
            hit = self._exact(frag) or self._near(frag)
            if hit is not None and hit[1] > hit[0]:
                spans.append((int(self.idx[hit[0]]), int(self.idx[hit[1] - 1]) + 1))
        return spans

    def _exact(self, frag: str) -> tuple[int, int] | None:
        pos = self.norm.find(frag)
        return (pos, pos + len(frag)) if pos >= 0 else None

    def _near(self, frag: str) -> tuple[int, int] | None:
        size = len(frag)
        if not MIN_FUZZY_CHARS <= size <= len(self.norm):
            return None
        pieces = [(i * size // k, (i + 1) * size // k) for k in (2, 4) for i in range(k)]
        tried: set[int] = set()
        for a, b in pieces:
            piece = frag[a:b]
            if len(piece.strip()) < 4:
                continue
            at = self.norm.find(piece)
            for _ in range(self.ANCHOR_PLACES):
                if at < 0:
                    break
                lo = max(0, at - a - size // 2)
                if lo not in tried:
                    tried.add(lo)
                    window = self.norm[lo:at - a + size + size // 2]
                    al = fuzz.partial_ratio_alignment(frag, window, score_cutoff=MATCH_THRESHOLD)
                    if al is not None and _meaning_marks(frag) == _meaning_marks(
                            _word_window(window, al.dest_start, al.dest_end)):
                        return lo + al.dest_start, lo + al.dest_end
                at = self.norm.find(piece, at + 1)
        return None


def locate(quote: str, text: str) -> list[tuple[int, int]]:
    """Where the fragments of ``quote`` sit in the original ``text`` (start, end), for highlighting (one quote;
    for many in one text, one :class:`Locator`)."""
    return Locator(text).spans(quote)
