"""Judge calibration against human labels: the seed's ``calibrate_judge.py`` plus agreement statistics.

The seed compares the ids present in both files, reports the mean absolute delta and the per-case deltas
worst first, exits 1 above ``--threshold``, and can record the check in the judge prompt's calibration table.
referee adds exact agreement, Cohen's kappa (quadratic-weighted for ordinal scales), Spearman and Kendall,
mean absolute and mean signed difference and a confusion matrix, each with a bootstrap CI.

Scales: each side's values are read as they are (booleans as 1/0). ``--judge-scale``/``--human-scale LO-HI``
map a side linearly onto 0-1 first. Two sides on visibly different scales (one within 0-1, the other
beyond it) are an error, never silently compared.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError, UserError

if TYPE_CHECKING:
    from ..aggregate import ResultsTable
from ..results._io import iter_jsonl_lenient
from ..stats._agreement import Agreement, agreement
from ..stats._bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED

LOG_HEADER = "| Date | Cases checked | Mean delta vs human | Action taken |"
PLACEHOLDER = "not yet calibrated"
_MAX_LEVELS = 11  # integer labels with at most this many distinct values are categorical (Likert, 0-10)


@dataclass
class Labels:
    """One side's labels: id -> value (repeated ids averaged), and what was left out."""

    path: str
    values: dict[str, float] = field(default_factory=dict)
    integer: bool = True
    """Every raw value was an integer (or boolean): a categorical scale."""
    repeats: int = 0
    unscored: int = 0
    warnings: list[str] = field(default_factory=list)
    """Malformed lines that were skipped, each naming file and line (as ``referee score`` and the seed do)."""
    passed: dict[str, bool] = field(default_factory=dict)
    """id -> the row's own pass/fail verdict, where it has one (every row of the id agreeing)."""
    repeated: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    """id -> (line, value) of each of its rows, for the ids given more than once (their values are averaged)."""

    def repeat_warning(self, what: str, shown: int = 5) -> str | None:
        """One line saying which ids were given more than once and what was done (their mean used), or None."""
        if not self.repeated:
            return None
        parts = []
        for cid, rows in list(self.repeated.items())[:shown]:
            lines = ", ".join(str(n) for n, _ in rows)
            values = ", ".join(f"{v:g}" for _, v in rows)
            parts.append(f"'{cid}' (lines {lines}: {values} -> {sum(v for _, v in rows) / len(rows):g})")
        more = f", and {len(self.repeated) - shown} more" if len(self.repeated) > shown else ""
        return (f"{len(self.repeated)} id(s) with more than one {what} in {self.path}; each is given the mean of "
                f"its values: {', '.join(parts)}{more}")

    @property
    def levels(self) -> list[float]:
        return sorted(set(self.values.values()))


def parse_scale(text: str) -> tuple[float, float]:
    """``"LO-HI"`` (``--judge-scale``/``--human-scale``, e.g. ``1-5``) as ``(lo, hi)``; a :class:`UserError`
    otherwise."""
    m = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*(?:-|:|\.\.)\s*(-?\d+(?:\.\d+)?)\s*", text)
    if not m or float(m.group(1)) >= float(m.group(2)):
        raise UserError(f"scale {text!r}: expected LO-HI with LO < HI, e.g. 1-5")
    return float(m.group(1)), float(m.group(2))


def read_labels(path: str | Path, *, field_name: str | None = None,
                scale: tuple[float, float] | None = None, strict: bool = False) -> Labels:
    """Read ``{id, score}`` rows (referee results, seed rows, or human label files; ``label`` or ``human_score``
    also accepted). Rows whose status is not ``scored`` or whose value is null are counted as unscored.

    A malformed line (not JSON, not an object, no id, a value that is not a number) is skipped with a warning naming file and line, as the seed's scripts do; ``strict`` makes it an InputError."""
    p = Path(path)
    out = Labels(path=str(p))
    sums: dict[str, list[float]] = {}
    lines: dict[str, list[int]] = {}
    verdicts: dict[str, set[bool]] = {}

    def bad(err: InputError) -> None:
        if strict:
            raise err
        out.warnings.append(f"skipped {err}")

    if not p.is_file():
        raise InputError("file not found", file=str(p))
    for lineno, obj in iter_jsonl_lenient(p):
        if isinstance(obj, InputError):
            bad(obj)
            continue
        if not isinstance(obj, dict):
            bad(InputError("expected a JSON object", file=str(p), line=lineno))
            continue
        if obj.get("id") in (None, "") or isinstance(obj.get("id"), dict | list | bool):
            bad(InputError("missing or not an id", file=str(p), line=lineno, field="id"))
            continue
        cid = str(obj["id"])
        key = field_name or next((k for k in ("score", "label", "human_score") if k in obj), "score")
        if obj.get("status", "scored") != "scored" or obj.get(key) is None:
            out.unscored += 1
            continue
        raw = obj[key]
        if isinstance(raw, bool):
            v = 1.0 if raw else 0.0
        elif isinstance(raw, int | float) and math.isfinite(raw):
            v = float(raw)
        else:
            bad(InputError(f"{str(raw)[:40]!r} is not a number", file=str(p), line=lineno, field=key))
            continue
        if scale is not None and not scale[0] <= v <= scale[1]:
            # Not a malformed line: the scale given on the command line does not fit the file.
            raise InputError(f"{v:g} is outside the scale {scale[0]:g}-{scale[1]:g}", file=str(p),
                             line=lineno, field=key)
        sums.setdefault(cid, []).append(v)
        lines.setdefault(cid, []).append(lineno)
        verdict = obj.get("passed")
        if isinstance(verdict, bool):
            verdicts.setdefault(cid, set()).add(verdict)
    out.passed = {cid: next(iter(vs)) for cid, vs in verdicts.items() if len(vs) == 1}
    for cid, vs in sums.items():
        mean = sum(vs) / len(vs)
        if len(vs) > 1:
            out.repeats += 1
            out.repeated[cid] = list(zip(lines[cid], vs, strict=True))
        if not mean.is_integer():
            out.integer = False  # a fractional or averaged label is no longer a category
        out.values[cid] = mean if scale is None else (mean - scale[0]) / (scale[1] - scale[0])
    return out


def judge_labels(path: str | Path, *, threshold: float | None = None, pass_rule: str = "threshold",
                 field_name: str | None = None, scale: tuple[float, float] | None = None, strict: bool = False,
                 table: ResultsTable | None = None) -> Labels:
    """A judge's results file as calibration labels. With a pass ``threshold``, every case also gets a pass/fail
    verdict: the row's own ``passed`` where it has one, else the verdict rule of ``referee score`` (``threshold``,
    ``pass_rule``) over its scored rows when they all agree, so pass/fail human labels meet pass/fail verdicts.
    Without one (the seed's ``calibrate_judge.py``), only rows' own verdicts are known. ``referee calibrate`` and
    the viewer's agreement both read a run through this one function (the viewer with its threshold, and the
    command it prints with ``--pass-threshold``), so they print the same figures. ``table``: the file already
    loaded by the aggregator (the viewer's), else it is loaded here."""
    from ..aggregate import load_table
    from ..aggregate._load import SCORED

    labels = read_labels(path, field_name=field_name, scale=scale, strict=strict)
    if threshold is None:
        return labels
    if table is None:
        try:
            table = load_table(path, split=False)
        except InputError:
            return labels  # read_labels already said what is wrong with the lines it skipped
    rows = np.flatnonzero(table.status == SCORED).astype(np.int64)
    ok = table.row_passes(rows, threshold, pass_rule)
    by_rule: dict[str, set[bool]] = {}
    for i, good in zip(rows.tolist(), ok.tolist(), strict=True):
        by_rule.setdefault(table.ids[i], set()).add(bool(good))
    for cid, verdicts in by_rule.items():
        if cid in labels.values and cid not in labels.passed and len(verdicts) == 1:
            labels.passed[cid] = next(iter(verdicts))
    return labels


def _range(lab: Labels) -> tuple[float, float]:
    vs = list(lab.values.values())
    return min(vs), max(vs)


@dataclass
class Calibration:
    """A judge's scores against human labels on the ids both files hold: per-case deltas (worst first), the
    mean absolute delta, the agreement statistics with their intervals, and notes on what could not be
    computed."""

    n: int
    judge_only: int
    human_only: int
    per_case: list[dict[str, Any]]
    """``{id, judge, human, delta}`` sorted by absolute delta, worst first."""
    mean_abs_delta: float
    stats: Agreement
    scale_note: str
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "judge_only": self.judge_only, "human_only": self.human_only,
                "mean_abs_delta": self.mean_abs_delta, "scale": self.scale_note, "notes": self.notes,
                "agreement": self.stats.to_dict(), "per_case": self.per_case}

    def above(self, threshold: float) -> bool:
        """Whether the mean absolute delta is above ``threshold``. Rounded first so that float noise
        (0.9 - 0.7 = 0.20000000000000007) never fails a 0.2 gate while printing "0.200"."""
        return round(self.mean_abs_delta, 9) > threshold

    def gate_failures(self, threshold: float, *, min_kappa: float | None = None,
                      min_agreement: float | None = None, min_spearman: float | None = None,
                      min_kendall: float | None = None) -> list[str]:
        """Why the calibration gates fail (empty: they pass): the mean delta above ``threshold``, a statistic
        below its minimum, or undefined where a minimum is asked for."""
        failures: list[str] = []
        if self.above(threshold):
            failures.append(f"mean delta {self.mean_abs_delta:.3f} is above the threshold {threshold:g}")
        st = self.stats
        for name, gate, iv in (("kappa", min_kappa, st.kappa), ("exact agreement", min_agreement, st.exact),
                               ("Spearman rho", min_spearman, st.spearman), ("Kendall tau", min_kendall, st.kendall)):
            if gate is None:
                continue
            if iv is None or iv.estimate is None:
                failures.append(f"{name} is undefined for these labels, so the --min gate cannot pass")
            elif iv.estimate < gate:
                failures.append(f"{name} {iv.estimate:.3f} is below the minimum {gate:g}")
        return failures


def calibrate(judge: Labels, human: Labels, *, n_boot: int = DEFAULT_N_BOOT,
              seed: int = DEFAULT_SEED, judge_scaled: bool = False, human_scaled: bool = False) -> Calibration:
    """Compare the ids present in both files. Raises :class:`UserError` when nothing can be compared."""
    if not judge.values:
        why = f" ({judge.unscored} row(s) unscored or without a value)" if judge.unscored else ""
        raise UserError(f"{judge.path}: no scored rows to calibrate{why}")
    if not human.values:
        why = f" ({human.unscored} row(s) without a value; use --human-field to name it)" if human.unscored else ""
        raise UserError(f"{human.path}: no labelled rows to calibrate against{why}")
    shared = [cid for cid in judge.values if cid in human.values]
    if not shared:
        raise UserError(f"no ids in common between {judge.path} ({len(judge.values)} ids) and {human.path} "
                        f"({len(human.values)} ids): check that both files label the same cases")
    jlo, jhi = _range(judge)
    hlo, hhi = _range(human)
    j_unit = 0.0 <= jlo and jhi <= 1.0
    h_unit = 0.0 <= hlo and hhi <= 1.0
    if j_unit != h_unit:
        raise UserError(
            f"label scales do not match: judge scores span {jlo:g}-{jhi:g}, human labels span {hlo:g}-{hhi:g}. "
            "Map one onto the other with --judge-scale LO-HI or --human-scale LO-HI (e.g. --human-scale 1-5)")
    notes: list[str] = []
    if judge.unscored:
        notes.append(f"{judge.unscored} judge row(s) unscored or without a score: left out")
    if human.unscored:
        notes.append(f"{human.unscored} human row(s) without a label: left out")
    if judge.repeats:
        notes.append(f"{judge.repeats} id(s) judged more than once: their scores are averaged")
    if human.repeats:
        notes.append(f"{human.repeats} id(s) labelled more than once: their labels are averaged")
    x = [judge.values[c] for c in shared]
    y = [human.values[c] for c in shared]
    if (human.integer and set(y) <= {0.0, 1.0} and not (judge.integer and set(x) <= {0.0, 1.0})
            and all(c in judge.passed for c in shared)):
        # Pass/fail labels against a continuous judge: compared with the judge's own pass/fail verdicts, so
        # agreement and kappa are defined (the deltas of the continuous scores would measure another thing).
        x = [1.0 if judge.passed[c] else 0.0 for c in shared]
        judge = dataclasses.replace(judge, values={**judge.values, **dict(zip(shared, x, strict=True))},
                                    integer=True)
        notes.append("the human labels are pass/fail: they are compared with the judge's pass/fail verdicts "
                     "(its rows' passed), not its scores")
    categorical = judge.integer and human.integer
    levels = sorted(set(x) | set(y))
    if categorical and len(levels) > _MAX_LEVELS:
        categorical = False
    ordinal = categorical and len(levels) > 2
    labels: list[float] | None = None
    if categorical and not (judge_scaled or human_scaled):
        lo, hi = int(min(levels)), int(max(levels))
        labels = [float(v) for v in range(lo, hi + 1)] if ordinal else levels
    if not categorical:
        hint = ("; to compare pass/fail labels with the judge's pass/fail verdicts, give the pass threshold "
                "(--pass-threshold, as referee score --threshold)"
                if human.integer and set(y) <= {0.0, 1.0} else "")
        notes.append("exact agreement, kappa and the confusion matrix need categorical labels on both sides "
                     "(integers, e.g. pass/fail or 1-5); the judge's or the humans' values are continuous here" + hint)
    st = agreement(x, y, categorical=categorical, ordinal=ordinal, labels=labels, n_boot=n_boot, seed=seed)
    if len(set(x)) == 1:
        notes.append(f"one-sided sample: every judge value is {x[0]:g}, so kappa and correlations are undefined")
    if len(set(y)) == 1:
        notes.append(f"one-sided sample: every human value is {y[0]:g}, so kappa and correlations are undefined")
    if len(shared) < 2:
        notes.append("only one case in common: no confidence interval can be computed")
    elif len(shared) < 20:
        notes.append(f"small sample ({len(shared)} cases): the intervals are wide")
    per_case: list[dict[str, Any]] = sorted(({"id": c, "judge": judge.values[c], "human": human.values[c],
                        "delta": judge.values[c] - human.values[c]} for c in shared),
                      key=lambda r: (-abs(float(r["delta"])), str(r["id"])))
    scale = ("categorical, ordinal (quadratic-weighted kappa)" if ordinal else
             "categorical, binary (unweighted kappa)" if categorical else "continuous")
    mad = st.mean_abs_diff.estimate
    assert mad is not None
    return Calibration(
        n=len(shared), judge_only=len(judge.values) - len(shared), human_only=len(human.values) - len(shared),
        per_case=per_case, mean_abs_delta=mad, stats=st, scale_note=scale, notes=notes,
    )


def _cells(line: str) -> list[str] | None:
    t = line.strip()
    if not t.startswith("|"):
        return None
    return [" ".join(c.split()).lower() for c in t.strip("|").split("|")]


_HEADER_CELLS = _cells(LOG_HEADER)


def is_log_header(line: str) -> bool:
    """The calibration table's header, whatever its column padding or alignment (the seed's tables are often
    padded to line up: ``| Date       | Cases checked | ...``)."""
    return _cells(line) == _HEADER_CELLS


def update_log(path: str | Path, *, cases: int, mean_delta: float, action: str,
               date: str | None = None) -> str:
    """Record a calibration in the judge prompt's table ``| Date | Cases checked | Mean delta vs human |
    Action taken |``: the ``not yet calibrated`` placeholder row is replaced the first time, rows are
    appended afterwards. A file without the table gets one at the end. Returns the row written."""
    p = Path(path)
    if not p.exists():
        raise InputError("calibration log file not found", file=str(p))
    text = p.read_text(encoding="utf-8")
    day = date or _dt.date.today().isoformat()
    safe_action = action.replace("|", "\\|").replace("\n", " ").strip() or "none"
    row = f"| {day} | {cases} | {mean_delta:.3f} | {safe_action} |"
    lines = text.split("\n")
    head = next((i for i, ln in enumerate(lines) if is_log_header(ln)), None)
    if head is None:
        sep = "" if text.endswith("\n") or not text else "\n"
        p.write_text(f"{text}{sep}\n## Calibration log\n\n{LOG_HEADER}\n|---|---|---|---|\n{row}\n",
                     encoding="utf-8")
        return row
    end = head + 1
    while end < len(lines) and lines[end].strip().startswith("|"):
        end += 1
    placeholder = next((i for i in range(head + 1, end) if PLACEHOLDER in lines[i].lower()), None)
    if placeholder is not None:
        lines[placeholder] = row
    else:
        lines.insert(end, row)
    p.write_text("\n".join(lines), encoding="utf-8")
    return row
