"""Human labels for alignment: per reviewer, their consensus per case, the case's group and the reviewer's rationale.

Reads the viewer's label files and ``referee calibrate``'s (JSONL ``{id, score | label | human_score, reviewer?,
comment?}``) and CSV files with named id and label columns. Unlike ``calibrate.read_labels`` (which averages
repeated ids), each reviewer's label is kept: two reviewers who disagree on a case are not averaged into a label
neither gave; the case has no consensus and is left out, and the report says how many.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import InputError, UserError
from ..results._io import iter_jsonl_lenient

MAX_LABEL_BYTES = 64 * 2**20
"""Labels are typed by people: a file larger than this is not a labels file."""
MAX_RATIONALE = 2000
"""A reviewer's rationale is shown to the judge as an example's explanation: longer text is cut."""
MAX_LEVELS = 11
"""Label values with at most this many distinct levels are categories (pass/fail, 1-5, 0-10)."""
DEFAULT_REVIEWER = "anonymous"  # the viewer's name for a label saved without one

Kind = Literal["binary", "ordinal", "continuous"]


@dataclass
class HumanLabels:
    """The labels of one file: each reviewer's, and the consensus alignment uses."""

    path: str
    sha256: str
    by_reviewer: dict[str, dict[str, float]] = field(default_factory=dict)
    """reviewer -> case id -> label."""
    values: dict[str, float] = field(default_factory=dict)
    """case id -> the reviewers' consensus (a case with one reviewer: their label)."""
    no_consensus: list[str] = field(default_factory=list)
    """Cases whose reviewers gave different labels with no strict majority: left out of alignment."""
    rationale: dict[str, str] = field(default_factory=dict)
    groups: dict[str, str] = field(default_factory=dict)
    """case id -> its group (the same prompt, the same source): one side of the split."""
    warnings: list[str] = field(default_factory=list)

    @property
    def levels(self) -> list[float]:
        return sorted(set(self.values.values()))

    @property
    def kind(self) -> Kind:
        levels = self.levels
        if set(levels) <= {0.0, 1.0}:
            return "binary"
        return "ordinal" if len(levels) <= MAX_LEVELS else "continuous"

    @property
    def reviewers(self) -> list[str]:
        return sorted(self.by_reviewer)


def _number(raw: Any) -> float | None:
    if isinstance(raw, bool):
        return 1.0 if raw else 0.0
    if isinstance(raw, int | float):
        v = float(raw)
        return v if math.isfinite(v) else None
    if isinstance(raw, str):
        t = raw.strip().lower()
        if t in ("true", "pass", "yes"):
            return 1.0
        if t in ("false", "fail", "no"):
            return 0.0
        try:
            v = float(t)
        except ValueError:
            return None
        return v if math.isfinite(v) else None
    return None


def _records(p: Path, data: bytes) -> list[tuple[int, Any]]:
    if p.suffix.lower() in (".csv", ".tsv"):
        text = data.decode("utf-8-sig", errors="strict")
        reader = csv.DictReader(io.StringIO(text, newline=""), delimiter="\t" if p.suffix.lower() == ".tsv" else ",")
        return [(i + 2, dict(row)) for i, row in enumerate(reader)]
    return list(iter_jsonl_lenient(p))


def read_human_labels(path: str | Path, *, id_field: str = "id", label_field: str | None = None,
                      reviewer_field: str = "reviewer", group_field: str | None = None,
                      rationale_field: str = "comment", scale: tuple[float, float] | None = None,
                      reviewers: list[str] | None = None) -> HumanLabels:
    """Read a labels file. ``label_field``: default ``score``, else ``label``, else ``human_score``, else
    ``passed``. ``scale``: the labels' declared ``LO-HI`` (a value outside it is an error naming file and
    line; values are mapped onto 0-1). ``reviewers``: keep only these reviewers' labels. A line that is not
    an object, has no id or no number is skipped with a warning naming file and line."""
    p = Path(path)
    if not p.is_file():
        raise InputError("labels file not found", file=str(p))
    size = p.stat().st_size
    if size > MAX_LABEL_BYTES:
        raise InputError(f"{size} bytes: larger than a labels file can be ({MAX_LABEL_BYTES} bytes)", file=str(p))
    data = p.read_bytes()
    out = HumanLabels(path=str(p), sha256=hashlib.sha256(data).hexdigest())
    try:
        records = _records(p, data)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"cannot read the labels ({exc})", file=str(p)) from None
    rationale: dict[str, list[str]] = {}
    for lineno, obj in records:
        if isinstance(obj, InputError):
            out.warnings.append(f"skipped {obj}")
            continue
        if not isinstance(obj, dict):
            out.warnings.append(f"skipped {InputError('expected a JSON object', file=str(p), line=lineno)}")
            continue
        cid = obj.get(id_field)
        if cid in (None, "") or isinstance(cid, dict | list | bool):
            out.warnings.append(f"skipped {InputError('missing or not an id', file=str(p), line=lineno, field=id_field)}")
            continue
        key = label_field or next((k for k in ("score", "label", "human_score", "passed") if obj.get(k) not in
                                   (None, "")), "score")
        if key not in obj and label_field is not None:
            raise InputError(f"no column {label_field!r} (columns: {', '.join(sorted(map(str, obj)))[:200]})",
                             file=str(p), line=lineno, field=label_field)
        if obj.get(key) in (None, ""):
            continue  # an unlabelled case
        v = _number(obj[key])
        if v is None:
            out.warnings.append(f"skipped {InputError(f'{str(obj[key])[:40]!r} is not a label', file=str(p), line=lineno, field=key)}")
            continue
        if scale is not None:
            if not scale[0] <= v <= scale[1]:
                raise InputError(f"{v:g} is outside the labels' scale {scale[0]:g}-{scale[1]:g}", file=str(p),
                                 line=lineno, field=key)
            v = (v - scale[0]) / (scale[1] - scale[0])
        who = obj.get(reviewer_field, obj.get("rater"))
        who = str(who).strip() if who not in (None, "") else DEFAULT_REVIEWER
        if reviewers and who not in reviewers:
            continue
        cid = str(cid)
        # A reviewer's later line for a case replaces their earlier one (the viewer keeps one per reviewer).
        out.by_reviewer.setdefault(who, {})[cid] = v
        why = obj.get(rationale_field)
        if isinstance(why, str) and why.strip():
            rationale.setdefault(cid, []).append(why.strip()[:MAX_RATIONALE])
        if group_field is not None:
            g = obj.get(group_field)
            if g not in (None, ""):
                out.groups[cid] = str(g)
    if reviewers:
        missing = sorted(set(reviewers) - set(out.by_reviewer))
        if missing:
            raise UserError(f"{p}: no labels by reviewer(s) {', '.join(missing)} (reviewers in the file: "
                            f"{', '.join(sorted(out.by_reviewer)) or 'none'})")
    per_case: dict[str, list[float]] = {}
    for labels in out.by_reviewer.values():
        for cid, v in labels.items():
            per_case.setdefault(cid, []).append(v)
    for cid, vs in per_case.items():
        top, count = Counter(vs).most_common(1)[0]
        if count * 2 > len(vs):
            out.values[cid] = top
        else:
            out.no_consensus.append(cid)
    out.no_consensus.sort()
    out.rationale = {cid: " / ".join(rs) for cid, rs in rationale.items() if cid in out.values}
    return out
