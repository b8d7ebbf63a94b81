"""Readers for the LLMBar data (Zeng et al., ICLR 2024): recorded verdict tables, published statistics and
the pair texts (for output lengths), as laid out in ``shared/data/llmbar`` (see its README).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..results._io import iter_jsonl_objects
from ._pairwise import PairVerdict

REQUIRED_COLUMNS = ("label", "winner_noswap", "winner_swap")
GROUP_COLUMNS = ("subset", "evaluator", "strategy")
_VALID = {"1", "2", "tie", ""}

GroupKey = tuple[str, ...]


def read_verdicts(path: str | Path) -> dict[GroupKey, list[PairVerdict]]:
    """A verdict table (LLMBar's ``verdicts.csv`` layout) grouped by (subset, evaluator, strategy).

    Required columns: ``label``, ``winner_noswap``, ``winner_swap`` and an id (``idx`` or ``id``); the group
    columns are optional. Winners use the original numbering (1, 2, tie); an empty winner is an unparsed
    verdict (None). Any other value is an input error naming file, line and column.
    """
    p = Path(path)
    if not p.exists():
        raise InputError("file not found", file=str(p))
    groups: dict[GroupKey, list[PairVerdict]] = {}
    with open(p, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        cols = reader.fieldnames or []
        missing = [c for c in REQUIRED_COLUMNS if c not in cols]
        if "idx" not in cols and "id" not in cols:
            missing.append("idx (or id)")
        if missing:
            raise InputError(f"missing column(s) {', '.join(missing)}", file=str(p), line=1)
        id_col = "idx" if "idx" in cols else "id"
        group_cols = [c for c in GROUP_COLUMNS if c in cols]
        for lineno, row in enumerate(reader, 2):
            for col in REQUIRED_COLUMNS:
                val = (row[col] or "").strip().lower()
                if val not in _VALID or (col == "label" and not val):
                    raise InputError(f"{row[col]!r} is not 1, 2 or tie", file=str(p), line=lineno, field=col)
            key = tuple(row[c] for c in group_cols)
            groups.setdefault(key, []).append(PairVerdict(
                id=row[id_col], label=row["label"].strip().lower(),
                noswap=(row["winner_noswap"] or "").strip().lower() or None,
                swap=(row["winner_swap"] or "").strip().lower() or None, group="/".join(key)))
    return groups


def read_published(path: str | Path) -> dict[GroupKey, dict[str, str]]:
    """``statistics_published.csv``: the upstream ``statistics.json`` cells, as the strings written there."""
    with open(path, newline="", encoding="utf-8") as f:
        return {(r["subset"], r["evaluator"], r["strategy"]): r for r in csv.DictReader(f)}


def read_lengths(dataset_json: str | Path) -> list[tuple[int, int]]:
    """Character lengths of ``output_1`` and ``output_2`` for each pair of a ``dataset.json``."""
    data = json.loads(Path(dataset_json).read_text(encoding="utf-8"))
    return [(len(d["output_1"]), len(d["output_2"])) for d in data]


def with_lengths(items: Iterable[PairVerdict], lengths: list[tuple[int, int]]) -> list[PairVerdict]:
    """Attach output lengths (by ``idx``) to verdicts of one subset."""
    out = []
    for v in items:
        i = int(v.id)
        if i >= len(lengths):
            raise InputError(f"idx {i} is beyond the {len(lengths)} pairs of the dataset")
        l1, l2 = lengths[i]
        out.append(PairVerdict(v.id, v.label, v.noswap, v.swap, l1, l2, v.group))
    return out


def dataset_path(root: str | Path, subset: str) -> Path:
    return Path(root) / "data" / subset / "dataset.json"


@dataclass(frozen=True)
class RawVerdict:
    """One recorded judge completion and the verdict upstream recorded for it (original numbering)."""

    file: str
    idx: int
    swap: bool
    completion: str
    recorded: str | None


def read_raw_results(path: str | Path) -> list[RawVerdict]:
    """Comparison completions of one ``raw_results/<subset>/<evaluator>/<strategy>.jsonl`` file.

    The last entry of each instance's ``results`` holds the final verdict per order. Rating strategies keep
    scores instead of a comparison completion and yield nothing here.
    """
    out: list[RawVerdict] = []
    p = Path(path)
    for lineno, row in iter_jsonl_objects(p):
        results = row.get("results")
        if not isinstance(results, list) or not results or not isinstance(results[-1], dict):
            raise InputError("expected a non-empty list of result objects", file=str(p), line=lineno,
                             field="results")
        if not isinstance(row.get("idx"), int):
            raise InputError(f"{row.get('idx')!r} is not an integer index", file=str(p), line=lineno,
                             field="idx")
        last = results[-1]
        for swap in (False, True):
            entry = last.get(f"swap = {swap}")
            if not isinstance(entry, dict) or "completion" not in entry:
                continue
            comp = entry["completion"]
            text = comp[0] if isinstance(comp, list) and comp else (comp if isinstance(comp, str) else "")
            win = entry.get("winner")
            out.append(RawVerdict(f"{p}:{lineno}", int(row["idx"]), swap, text or "",
                                  None if win in (None, "") else str(win)))
    return out


def parse_raw(rv: RawVerdict) -> str | None:
    """Parse one recorded completion with referee's pairwise reply parser; the winner in original numbering
    (in the swapped order the output shown first is output 2), or None when the reply names no winner."""
    from ..evaluators._pairwise import parse_pairwise_reply
    from ..evaluators._reply import ReplyInvalid

    try:
        pick = parse_pairwise_reply(rv.completion).pick
    except ReplyInvalid:
        return None
    if pick == "tie":
        return "tie"
    if rv.swap:
        return "2" if pick == "1" else "1"
    return pick
