"""JudgeBench (Tan et al., ICLR 2025) judge outputs: ``outputs/<model>__<judge>__<judge_model>.jsonl``.

Each line has ``pair_id``, ``label`` (``A>B``/``B>A``, objective correctness) and ``judgments[2]``: the original
order, then the run with the responses swapped (its ``decision`` refers to swapped positions and is flipped
back here).

Categories as in the JudgeBench paper, from ``source``: ``mmlu-pro-*`` knowledge, ``livebench-reasoning``
reasoning, ``livebench-math`` math, ``livecodebench`` coding.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from ..results._io import iter_jsonl_objects
from ._pairwise import PairVerdict

_TO_ORIGINAL = {"A>B": "1", "B>A": "2", "A=B": "tie"}
_FLIP = {"A>B": "B>A", "B>A": "A>B", "A=B": "A=B"}


def _decision(value: object, flip: bool) -> str | None:
    if not isinstance(value, str):
        return None
    v = value.strip()
    if flip:
        v = _FLIP.get(v, v)
    return _TO_ORIGINAL.get(v)


def read_outputs(path: str | Path) -> list[PairVerdict]:
    p = Path(path)
    out: list[PairVerdict] = []
    for lineno, obj in iter_jsonl_objects(p):
        label = _TO_ORIGINAL.get(str(obj.get("label", "")))
        if label is None:
            raise InputError(f"{obj.get('label')!r} is not A>B or B>A", file=str(p), line=lineno,
                             field="label")
        js = obj.get("judgments") or []
        if not isinstance(js, list) or len(js) != 2 or not all(isinstance(j, dict) for j in js):
            raise InputError("expected two judgments (original and swapped order)", file=str(p),
                             line=lineno, field="judgments")
        out.append(PairVerdict(
            id=str(obj.get("pair_id", lineno)), label=label,
            noswap=_decision(js[0].get("decision"), False), swap=_decision(js[1].get("decision"), True),
            group=str(obj.get("source", ""))))
    return out


def judgebench_accuracy(items: list[PairVerdict]) -> float:
    """JudgeBench's metric: each order scores +1 if right, -1 if it names the wrong output, 0 otherwise
    (tie or no verdict); a pair is correct when the sum is positive. Returns the share of correct pairs."""
    if not items:
        raise ValueError("no pairs: accuracy is undefined for an empty sample")

    def s(v: str | None, label: str | None) -> int:
        if v == label:
            return 1
        if v in ("1", "2"):
            return -1
        return 0

    return sum(s(v.noswap, v.label) + s(v.swap, v.label) > 0 for v in items) / len(items)


CATEGORIES = ("knowledge", "reasoning", "math", "coding")


def category_of(source: str | None) -> str:
    """The JudgeBench category of a pair's ``source`` (unknown sources keep their own name)."""
    src = (source or "").strip().lower()
    if src.startswith("mmlu-pro"):
        return "knowledge"
    if src == "livebench-reasoning":
        return "reasoning"
    if src == "livebench-math":
        return "math"
    if src.startswith("livecodebench"):
        return "coding"
    return src or "(no source)"


def judgebench_by_category(items: list[PairVerdict]) -> dict[str, tuple[int, float]]:
    """JudgeBench accuracy per category: ``{category: (pairs, accuracy)}``, in the paper's order (knowledge,
    reasoning, math, coding), then any other source."""
    groups: dict[str, list[PairVerdict]] = {}
    for v in items:
        groups.setdefault(category_of(v.group), []).append(v)
    order = [c for c in CATEGORIES if c in groups] + sorted(c for c in groups if c not in CATEGORIES)
    return {c: (len(groups[c]), judgebench_accuracy(groups[c])) for c in order}
