"""``align``: fit an aligned judge on some labels, measure it on the others, keep it only when the held-out
interval says it helped over the raw judge AND over a baseline that asks no judge."""

from __future__ import annotations

import math
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UserError
from ..runner._client import JudgeClient
from ..runner._session import run_sync
from ..stats._agreement import interval_text
from ..stats._bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, Interval
from ._figures import (
    METRIC_NAMES,
    METRICS,
    RANK_METRICS,
    REFERENCES,
    Figures,
    default_metric,
    heldout_figures,
    labels_needed,
)
from ._file import AlignedJudge, Example, JudgeRef, LabelsRef, MapSpec, SplitRef
from ._labels import MAX_LEVELS, HumanLabels, Kind, read_human_labels
from ._map import ScoreMap, fit_map, snap
from ._prompt import MAX_EXAMPLES
from ._prompted import PromptFit, fit_prompt, refit_prompt
from ._rejudge import MAX_CANDIDATES, JudgeRunner
from ._split import Split, held_out_split

METHODS = ("examples", "instructions", "map")
"""In the order they compose: the examples and the instructions change the judge's prompt, the score map is fitted
last on the scores of that prompt."""
MODEL_METHODS = frozenset({"examples", "instructions"})
DEFAULT_EXAMPLES = 4
MIN_LABELS = 10
"""Fewer labelled cases than this cannot be split into two sides that say anything."""
DEFAULT_HOLDOUT = 0.5
DEFAULT_TARGET_WIDTH = 0.05


@dataclass
class Alignment:
    """What ``align`` found: the held-out figures, the decision and, when it was kept, the aligned judge."""

    kind: Kind
    method: list[str]
    n_labels: int
    split: Split
    figures: Figures
    written: bool
    reasons: list[str]
    aligned: AlignedJudge | None
    more_labels: dict[str, int] | None
    half_width: float | None
    target_width: float
    changed: list[dict[str, Any]] = field(default_factory=list)
    """Held-out cases whose verdict (or level) the alignment changed: id, raw, aligned, human."""
    notes: list[str] = field(default_factory=list)
    labels: HumanLabels | None = None
    """The labels read (each reviewer's), when ``align`` read a file."""
    run_id: str | None = None
    """The run the judge's scores came from (its manifest's run id), when known."""
    prompt: PromptFit | None = None
    """What the examples and instructions methods chose (the winning rewrite, its diff, the candidates, the
    examples) and what their calls cost."""
    reviewers_alpha: Interval | None = None
    """With several reviewers: their agreement with each other (Krippendorff's alpha; nominal for pass/fail,
    interval for scores), the ceiling a judge is measured against."""

    @property
    def too_wide(self) -> bool:
        """The decision gain's interval is wider than +-``target_width`` (or has none)."""
        return self.half_width is None or self.half_width > self.target_width + 1e-12

    def passes_min_gain(self, min_gain: float) -> bool:
        """Written, and the gain's lower bound over both references is at least ``min_gain``."""
        lows = self.figures.lower_bounds().values()
        return self.written and all(lo is not None and lo >= min_gain for lo in lows)

    def record(self, url: str | None = None) -> bool:
        """Record this alignment in the run history (``url``, default: the store in force; nothing when
        recording is off): the aligned judge when one was written, and every reviewer's label. Returns whether
        it was recorded. Raises ``StoreError`` when the store cannot be written."""
        from ..store import current, open_store, record_alignment

        if url is None and not current().enabled:
            return False
        labs: list[dict[str, Any]] = []
        if self.labels is not None:
            for who, vals in sorted(self.labels.by_reviewer.items()):
                labs.extend({"case_id": cid, "reviewer": who, "score": v,
                             "note": self.labels.rationale.get(cid)} for cid, v in sorted(vals.items()))
        judge_key = None
        if self.aligned is not None:
            import hashlib
            import json

            judge_key = hashlib.sha256(json.dumps(self.aligned.judge.model_dump(mode="json"), sort_keys=True)
                                       .encode()).hexdigest()[:32]
        with open_store(url) as st:
            record_alignment(st, alignment_id=self.aligned.hash if self.aligned else None, judge_key=judge_key,
                             config=self.aligned.model_dump(mode="json") if self.aligned else None,
                             metrics=self.to_dict(), labels=labs, run_id=self.run_id)
        return True

    def prompt_lines(self) -> list[str]:
        """What the prompt methods did: the examples shown, each candidate rewrite, the winning diff, the calls."""
        p = self.prompt
        assert p is not None
        out: list[str] = []
        if "examples" in self.method:
            out.append(f"examples: {len(p.examples)} labelled case(s) shown to the judge "
                       f"({', '.join(str(e['id']) for e in p.examples)})")
        for i, c in enumerate(p.candidates, 1):
            if c.get("refused"):
                out.append(f"candidate {i} refused: {c['refused']}")
            else:
                tr = c.get("train")
                out.append(f"candidate {i}: training agreement {'undefined' if tr is None else f'{tr:.3f}'}")
        if p.diff:
            out.append(f"the winning {p.part} edit:")
            out.extend("\x00" + line for line in p.diff.splitlines())  # a diff is shown as it is, never wrapped
        out.append(f"calls: {p.judge_calls} to the judge ({p.cached_calls} from the cache), {p.optimizer_calls} to "
                   f"the optimizer; ${p.cost_usd:.4f}")
        return out

    def to_dict(self) -> dict[str, Any]:
        p = self.prompt
        prompt = None if p is None else {
            "part": p.part, "text": p.text, "diff": p.diff, "examples": [e["id"] for e in p.examples],
            "candidates": p.candidates, "judge_calls": p.judge_calls, "cached_calls": p.cached_calls,
            "optimizer_calls": p.optimizer_calls, "cost_usd": p.cost_usd}
        return {"prompt": prompt, "kind": self.kind, "method": self.method, "n_labels": self.n_labels, "split": self.split.to_dict(),
                "heldout": self.figures.to_dict(), "written": self.written, "reasons": self.reasons,
                "aligned_hash": self.aligned.hash if self.aligned else None, "more_labels": self.more_labels,
                "half_width": self.half_width, "target_width": self.target_width, "changed": self.changed,
                "notes": self.notes,
                "reviewers_alpha": None if self.reviewers_alpha is None else self.reviewers_alpha.to_dict()}

    def lines(self) -> list[str]:
        """The report, in plain words, at most 80 columns wide."""
        f = self.figures
        out = [f"alignment ({'+'.join(self.method)}) on {self.n_labels} labelled cases: "
               f"{len(self.split.train)} to fit, {len(self.split.heldout)} held out"
               + (" (grouped)" if self.split.grouped else ""),
               f"held-out figures ({self.kind} labels; decided on {METRIC_NAMES[f.metric]}):"]
        for m in f.values["aligned"]:
            out.append(f"  {METRIC_NAMES[m]}")
            for p, name in (("raw", "raw judge"), ("aligned", "aligned"), ("baseline", "no judge")):
                out.append(f"    {name:<10} {interval_text(f.values[p][m])}")
            for ref in REFERENCES:
                if m in f.gains[ref]:
                    word = "raw judge" if ref == "raw" else "no judge"
                    out.append(f"    gain over {word:<9} {interval_text(f.gains[ref][m])}")
        if self.reviewers_alpha is not None and self.labels is not None:
            out.append(f"reviewers' agreement with each other ({len(self.labels.reviewers)} reviewers, "
                       f"Krippendorff's alpha): {interval_text(self.reviewers_alpha)}: the ceiling for a judge")
        if self.prompt is not None:
            out.extend(self.prompt_lines())
        out.append("aligned judge written" if self.written else "no aligned judge written: the original is kept")
        out.extend(f"  {r}" for r in self.reasons)
        if self.more_labels is not None:
            if any(self.more_labels.values()):
                per = ", ".join(f"{c}: {k}" for c, k in self.more_labels.items())
                out.append(f"to narrow the gain's interval to +-{self.target_width:g}: about "
                           f"{sum(self.more_labels.values())} more labels ({per})")
            else:
                out.append(f"the gain's interval is within +-{self.target_width:g}")
        out.extend(f"note: {n}" for n in self.notes)
        wrapped: list[str] = []
        for line in out:
            if line.startswith("\x00"):
                wrapped.append(line[1:])
                continue
            indent = " " * (len(line) - len(line.lstrip()))
            wrapped.extend(textwrap.wrap(line, 80, initial_indent="", subsequent_indent=indent + "  ",
                                         break_on_hyphens=False) or [""])
        return wrapped


def _kind_of(values: list[float]) -> Kind:
    levels = set(values)
    if levels <= {0.0, 1.0}:
        return "binary"
    return "ordinal" if len(levels) <= MAX_LEVELS else "continuous"


def _baseline(train_y: np.ndarray, kind: Kind, levels: list[float]) -> float:
    if kind == "binary":
        c = Counter(train_y.tolist()).most_common()
        top = max(k for _, k in c)
        return float(min(v for v, k in c if k == top))  # a tie goes to the lower label, fixed
    med = float(np.median(train_y))
    return float(snap(np.array([med]), levels)[0]) if kind == "ordinal" else med


def _fit(kind: Kind, scores: np.ndarray, labels: np.ndarray) -> ScoreMap:
    levels = sorted(set(labels.tolist())) if kind != "continuous" else None
    return fit_map(scores.tolist(), labels.tolist(), levels=levels)


def align_values(judge: dict[str, float], human: dict[str, float], *, raw_verdicts: dict[str, bool] | None = None,
                 groups: dict[str, str] | None = None, method: tuple[str, ...] = ("map",), holdout: float =
                 DEFAULT_HOLDOUT, split_seed: int = 0, metric: str | None = None, human_pass: float | None = None,
                 target_width: float = DEFAULT_TARGET_WIDTH, n_boot: int = DEFAULT_N_BOOT,
                 seed: int = DEFAULT_SEED, decision_only: bool = False,
                 candidate: dict[str, float] | None = None, candidate_verdicts: dict[str, bool] | None = None,
                 split: Split | None = None) -> tuple[Alignment, ScoreMap | None, float]:
    """The procedure on values already on one scale (judge score and human label per case id).

    ``raw_verdicts``: the judge's own pass/fail per case, the raw judge's answer to pass/fail labels (else its
    score rounded). Returns the alignment (without a file), the map refitted on every label when it is kept,
    and its pass mark on the judge's scale (nan: none). ``decision_only``: compute only the decision metric's
    figures (simulations over many seeds). ``candidate`` (and ``candidate_verdicts``): the scores of the judge
    with its aligned prompt (examples, instructions), which the map (when asked for) is fitted on and which is
    measured against the raw ``judge``; ``split``: the split that prompt was fitted on (else drawn here)."""
    method = methods_in_order(method)
    shared = sorted(c for c in human if c in judge)
    if not shared:
        raise UserError(f"none of the {len(human)} labelled case(s) is in the judge's run ({len(judge)} case(s)): "
                        "check that the labels name the run's case ids")
    notes: list[str] = []
    missing = len(human) - len(shared)
    if missing:
        notes.append(f"{missing} labelled case(s) are not in the judge's run (or it left them unscored): left out")
    if len(shared) < MIN_LABELS:
        raise UserError(f"{len(shared)} labelled case(s) in the run: alignment needs at least {MIN_LABELS} "
                        "(20 or more to say anything)")
    y_all = np.array([human[c] for c in shared], dtype=np.float64)
    kind = _kind_of(y_all.tolist())
    levels = sorted(set(y_all.tolist()))
    if len(levels) < 2:
        raise UserError(f"every label is {levels[0]:g}: with one class only, agreement is undefined and no map "
                        "can be fitted; label cases of the other class(es) too")
    metric = metric or default_metric(kind)
    if metric not in METRICS:
        raise UserError(f"metric {metric!r}: choose from {', '.join(METRICS)}")
    if metric in RANK_METRICS and "map" in method:
        raise UserError(f"a score map is never credited with a gain in rank correlation ({metric}): a map that "
                        "flattens ties can raise one by accident; decide on alpha, kappa, exact or mae")
    if metric in RANK_METRICS:
        raise UserError(f"alignment decides on agreement on the labels' scale, not on a rank correlation "
                        f"({metric}, reported beside it): decide on alpha, kappa, exact or mae")
    if metric in ("kappa", "exact") and kind == "continuous":
        raise UserError(f"{metric} needs categorical labels (at most {MAX_LEVELS} levels); these are continuous")
    jv = np.array([judge[c] for c in shared], dtype=np.float64)
    if not np.all(np.isfinite(jv)):
        raise UserError("a judge score is not a finite number")
    jlo, jhi, hlo, hhi = float(jv.min()), float(jv.max()), levels[0], levels[-1]
    if (0.0 <= jlo and jhi <= 1.0) != (0.0 <= hlo and hhi <= 1.0):
        raise UserError(f"label scales do not match: judge scores span {jlo:g}-{jhi:g}, human labels span "
                        f"{hlo:g}-{hhi:g}; declare the labels' scale (--human-scale LO-HI, e.g. 1-5) so both "
                        "are read on 0-1")
    if split is None:
        split = held_out_split(dict(zip(shared, y_all.tolist(), strict=True)), groups=groups, holdout=holdout,
                               seed=split_seed, categorical=kind != "continuous")
    pos = {c: i for i, c in enumerate(shared)}
    cand = judge if candidate is None else candidate
    dropped = [c for c in (*split.train, *split.heldout) if c in pos and c not in cand]
    if dropped:
        notes.append(f"{len(dropped)} labelled case(s) the aligned prompt left unscored: left out of the figures")
    tr = np.array([pos[c] for c in split.train if c in pos and c in cand], dtype=np.int64)
    ho = np.array([pos[c] for c in split.heldout if c in pos and c in cand], dtype=np.int64)
    if ho.size == 0 or tr.size == 0:
        raise UserError("no held-out (or no training) case was scored by the aligned prompt: nothing to measure")
    cv = np.array([cand.get(c, math.nan) for c in shared], dtype=np.float64)
    train_levels = sorted(set(y_all[tr].tolist()))
    if len(train_levels) < 2:
        raise UserError("the training side holds one class only: label more cases of each class")

    def raw_on_scale(ix: np.ndarray) -> np.ndarray:
        if kind == "binary":
            if raw_verdicts is not None and all(shared[i] in raw_verdicts for i in ix):
                return np.array([1.0 if raw_verdicts[shared[i]] else 0.0 for i in ix])
            return snap(jv[ix], [0.0, 1.0])
        return snap(jv[ix], levels) if kind == "ordinal" else jv[ix]

    def cand_on_scale(ix: np.ndarray) -> np.ndarray:
        if kind == "binary":
            if candidate_verdicts is not None and all(shared[i] in candidate_verdicts for i in ix):
                return np.array([1.0 if candidate_verdicts[shared[i]] else 0.0 for i in ix])
            return snap(cv[ix], [0.0, 1.0])
        return snap(cv[ix], levels) if kind == "ordinal" else cv[ix]

    mapped = "map" in method
    smap = _fit(kind, cv[tr], y_all[tr]) if mapped else None
    base = _baseline(y_all[tr], kind, train_levels)
    y = y_all[ho]
    preds = {"raw": raw_on_scale(ho), "aligned": smap(cv[ho]) if smap is not None else cand_on_scale(ho),
             "baseline": np.full(ho.size, base)}
    fig = heldout_figures(y, preds, kind=kind, metric=metric, levels=levels, n_boot=n_boot, seed=seed,
                          decision_only=decision_only)
    reasons: list[str] = []
    name = METRIC_NAMES[metric]
    for ref in REFERENCES:
        g = fig.decision_gain(ref)
        word = "the raw judge" if ref == "raw" else "the no-judge baseline"
        if g.estimate is None or g.lo is None:
            reasons.append(f"the gain in {name} over {word} is undefined on the held-out cases "
                           f"(n={g.n}: too few, or one class)")
        elif g.lo <= 0:
            reasons.append(f"the gain in {name} over {word} is {interval_text(g)}: its lower bound is not "
                           "above 0")
        else:
            reasons.append(f"the gain in {name} over {word} is {interval_text(g)}: above 0")
    written = all(lo is not None and lo > 0 for lo in fig.lower_bounds().values())
    widths = [(g.hi - g.lo) / 2 for g in (fig.decision_gain(r) for r in REFERENCES)
              if g.lo is not None and g.hi is not None]
    half = max(widths) if len(widths) == len(REFERENCES) else None
    counts = Counter(f"{v:g}" for v in y_all.tolist()) if kind != "continuous" else Counter(
        {"all": len(shared)})
    shares = {c: k / len(shared) for c, k in sorted(counts.items())}
    wide = max((fig.decision_gain(r) for r in REFERENCES),
               key=lambda g: -1.0 if g.lo is None or g.hi is None else g.hi - g.lo)
    more = labels_needed(wide, n_heldout=ho.size, holdout=split.holdout, class_shares=shares,
                         half_width=target_width)
    changed = [{"id": shared[i], "raw": float(r), "aligned": float(a), "human": float(h)}
               for i, r, a, h in zip(ho.tolist(), preds["raw"].tolist(), preds["aligned"].tolist(), y.tolist(),
                                     strict=True) if kind != "continuous" and r != a]
    final: ScoreMap | None = None
    mark = math.nan
    if written and mapped and candidate is None:
        final = _fit(kind, jv, y_all)  # the judge users get is refitted on every label
        level = 1.0 if kind == "binary" else human_pass
        if level is not None:
            pm = final.pass_mark(level)
            mark = math.nan if pm is None else pm
    al = Alignment(kind=kind, method=list(method), n_labels=len(shared), split=split, figures=fig, written=written,
                   reasons=reasons, aligned=None, more_labels=more, half_width=half, target_width=target_width,
                   changed=changed, notes=notes)
    return al, final, mark


def methods_in_order(method: tuple[str, ...] | str) -> tuple[str, ...]:
    """The methods asked for (a name, a comma list, or several), in the order they compose."""
    names = [method] if isinstance(method, str) else list(method)
    asked = [m.strip() for n in names for m in n.split(",") if m.strip()]
    for m in asked:
        if m not in METHODS:
            raise UserError(f"method {m!r}: this referee aligns by {', '.join(METHODS)}")
    if not asked:
        return ("map",)
    return tuple(m for m in METHODS if m in asked)


def _check_same_judge(rows: JudgeRef, judge: JudgeRunner, *, force: bool) -> None:
    """The run's rows must come from the judge that is re-run (else raw and aligned compare two judges)."""
    info = judge.client.judge_info(judge.judge.template_hash)
    now = JudgeRef(provider=info.provider, model=info.model, template_hash=info.template_hash)
    diffs = [f"{k} {getattr(rows, k)!r} (the run's rows) vs {getattr(now, k)!r} (re-run)"
             for k in ("provider", "model", "template_hash")
             if getattr(rows, k) is not None and getattr(now, k) is not None and getattr(rows, k) != getattr(now, k)]
    if not diffs:
        return
    msg = "the run was judged by another judge than the one alignment re-runs: " + "; ".join(diffs)
    if not force:
        raise UserError(msg + " (judge the run again with this judge, or pass --force)")
    import warnings

    warnings.warn(msg + " (aligned anyway: --force)", UserWarning, stacklevel=3)


async def _prompt_alignment(judge: JudgeRunner, optimizer: JudgeClient | None, raw: dict[str, float],
                            raw_verdicts: dict[str, bool], hl: HumanLabels, groups: dict[str, str], *,
                            methods: tuple[str, ...], holdout: float, split_seed: int, metric: str | None,
                            examples: int, candidates: int, human_pass: float | None, target_width: float,
                            n_boot: int, seed: int) -> tuple[Alignment, ScoreMap | None, float, PromptFit]:
    """The prompt fitted on the training side of the split, measured on the held-out side, refitted on every
    label when kept; one event loop for every call (the clients are closed at the end)."""
    try:
        shared = sorted(c for c in hl.values if c in raw)
        if len(shared) < MIN_LABELS:
            raise UserError(f"{len(shared)} labelled case(s) in the run: alignment needs at least {MIN_LABELS} "
                            "(20 or more to say anything)")
        missing = [c for c in shared if c not in judge.cases]
        if missing:
            raise UserError(f"{len(missing)} labelled case(s) are not among the judge's cases (first: {missing[0]}): "
                            "give the suite the run was judged with")
        y = [hl.values[c] for c in shared]
        kind = _kind_of(y)
        levels = sorted(set(y))
        if len(levels) < 2:
            raise UserError(f"every label is {levels[0]:g}: with one class only, agreement is undefined; label "
                            "cases of the other class(es) too")
        dec = metric or default_metric(kind)
        if dec not in METRICS:
            raise UserError(f"metric {dec!r}: choose from {', '.join(METRICS)}")
        if dec in RANK_METRICS:
            raise UserError(f"alignment decides on agreement on the labels' scale, not on a rank correlation "
                            f"({dec}): decide on alpha, kappa, exact or mae")
        split = held_out_split(dict(zip(shared, y, strict=True)), groups=groups or None, holdout=holdout,
                               seed=split_seed, categorical=kind != "continuous")
        fit = await fit_prompt(judge, methods=methods, train=split.train, heldout=split.heldout, human=hl.values,
                               raw=raw, raw_verdicts=raw_verdicts, rationale=hl.rationale, kind=kind,
                               levels=levels, metric=dec, n_examples=examples, n_candidates=candidates,
                               optimizer=optimizer, seed=split_seed)
        assert fit.scored is not None
        al, final, mark = align_values(raw, hl.values, raw_verdicts=raw_verdicts, groups=groups or None,
                                       method=methods, holdout=holdout, split_seed=split_seed, metric=dec,
                                       human_pass=human_pass, target_width=target_width, n_boot=n_boot, seed=seed,
                                       candidate=fit.scored.scores, candidate_verdicts=fit.scored.passed,
                                       split=split)
        al.notes.extend(fit.notes)
        al.prompt = fit
        if al.written:
            fit.examples, rescored = await refit_prompt(
                judge, fit, ids=shared, human=hl.values, raw=raw, raw_verdicts=raw_verdicts,
                rationale=hl.rationale, kind=kind, levels=levels, n_examples=examples, seed=split_seed,
                rescore="map" in methods)
            if rescored is not None:
                keep = [c for c in shared if c in rescored.scores]
                final = _fit(kind, np.array([rescored.scores[c] for c in keep]),
                             np.array([hl.values[c] for c in keep]))
                level = 1.0 if kind == "binary" else human_pass
                pm = final.pass_mark(level) if level is not None else None
                mark = math.nan if pm is None else pm
        return al, final, mark, fit
    finally:
        await judge.client.aclose()
        if optimizer is not None and optimizer is not judge.client:
            await optimizer.aclose()


def _judge_ref(results: Path) -> JudgeRef:
    from ..results import read_results

    loaded = read_results(results)
    seen = {(r.judge.provider, r.judge.model, r.judge.template_hash, r.evaluator) for r in loaded.rows
            if r.judge is not None}
    if len(seen) > 1:
        raise UserError(f"{results}: rows by {len(seen)} different judges; align one judge at a time")
    if not seen:
        return JudgeRef()
    p, m, t, e = next(iter(seen))
    return JudgeRef(provider=p, model=m, template_hash=t, evaluator=e)


def _row_groups(results: Path, group_field: str) -> dict[str, str]:
    from ..results import read_results

    out: dict[str, str] = {}
    for r in read_results(results).rows:
        g = (r.metadata or {}).get(group_field)
        if g not in (None, ""):
            out[r.id] = str(g)
    return out


def align(results: str | Path, labels: str | Path | HumanLabels, *, method: tuple[str, ...] | str = ("map",),
          threshold: float = 0.7, label_field: str | None = None, id_field: str = "id",
          group_field: str | None = None, reviewers: list[str] | None = None,
          human_scale: tuple[float, float] | None = None, holdout: float = DEFAULT_HOLDOUT, split_seed: int = 0,
          metric: str | None = None, human_pass: float | None = None,
          target_width: float = DEFAULT_TARGET_WIDTH, n_boot: int = DEFAULT_N_BOOT,
          seed: int = DEFAULT_SEED, judge: JudgeRunner | None = None, optimizer: JudgeClient | None = None,
          examples: int = DEFAULT_EXAMPLES, candidates: int = MAX_CANDIDATES, force: bool = False) -> Alignment:
    """Align the judge whose rows are in ``results`` (a run's results file) to the human ``labels`` (the viewer's
    or ``calibrate``'s label file, or a CSV with ``id_field`` and ``label_field`` columns).

    The decision is made on a fixed held-out split (``holdout`` of the cases, stratified by label, each
    ``group_field`` group on one side); the aligned judge (``Alignment.aligned``, save it with ``.save(path)``)
    exists only when the lower bound of its held-out gain over the raw judge and over the no-judge baseline is
    above 0. ``threshold``: the raw judge's pass mark (as ``referee score --threshold``), its verdict for
    pass/fail labels.

    ``examples`` and ``instructions`` (``method``) re-run the judge: ``judge`` is the judge of the run (an
    ``llm_judge``, its labelled cases and its provider's client: :class:`JudgeRunner`), ``optimizer`` the client
    of the model that proposes rewrites of its rubric (at most ``candidates``), ``examples`` how many labelled
    cases the prompt shows. Those clients are closed when it returns. A run judged by another model or template
    than ``judge`` is refused (``force``: a warning)."""
    from ..calibrate import judge_labels

    methods = methods_in_order(method)
    if MODEL_METHODS & set(methods) and judge is None:
        raise UserError(f"--method {'+'.join(sorted(MODEL_METHODS & set(methods)))} re-runs the judge: give the "
                        "suite it was run with (--suite)")
    if "instructions" in methods and optimizer is None:
        raise UserError("--method instructions needs an optimizer model (--optimizer PROVIDER[:MODEL])")
    if not 1 <= candidates <= MAX_CANDIDATES:
        raise UserError(f"candidates: 1 to {MAX_CANDIDATES}")
    if "examples" in methods and not 1 <= examples <= MAX_EXAMPLES:
        raise UserError(f"examples: 1 to {MAX_EXAMPLES}")
    rp = Path(results)
    jl = judge_labels(rp, threshold=threshold)
    if not jl.values:
        raise UserError(f"{rp}: no scored rows to align")
    hl = labels if isinstance(labels, HumanLabels) else read_human_labels(
        labels, id_field=id_field, label_field=label_field, group_field=group_field, scale=human_scale,
        reviewers=reviewers)
    if not hl.values:
        extra = f" ({len(hl.no_consensus)} case(s) without consensus)" if hl.no_consensus else ""
        raise UserError(f"{hl.path}: no labelled cases{extra}")
    groups = dict(hl.groups)
    if group_field is not None:
        for cid, g in _row_groups(rp, group_field).items():
            groups.setdefault(cid, g)
        if not groups:
            raise UserError(f"no case has a {group_field!r} field (in the labels or the rows' metadata)")
    fit: PromptFit | None = None
    if MODEL_METHODS & set(methods):
        assert judge is not None
        _check_same_judge(_judge_ref(rp), judge, force=force)
        al, final, mark, fit = run_sync(_prompt_alignment(
            judge, optimizer, jl.values, jl.passed, hl, groups, methods=methods, holdout=holdout,
            split_seed=split_seed, metric=metric, examples=examples, candidates=candidates, human_pass=human_pass,
            target_width=target_width, n_boot=n_boot, seed=seed))
    else:
        al, final, mark = align_values(jl.values, hl.values, raw_verdicts=jl.passed, groups=groups or None,
                                       method=methods, holdout=holdout, split_seed=split_seed, metric=metric,
                                       human_pass=human_pass, target_width=target_width, n_boot=n_boot, seed=seed)
    al.labels = hl
    if len(hl.reviewers) > 1:
        from ..stats._panel import krippendorff_alpha

        cases = sorted({c for vals in hl.by_reviewer.values() for c in vals})
        votes = [[hl.by_reviewer[r].get(c) for c in cases] for r in hl.reviewers]
        al.reviewers_alpha = krippendorff_alpha(votes, level="nominal" if al.kind == "binary" else "interval",
                                                n_boot=min(n_boot, 500), seed=seed)
    from ..results._manifest import RunManifest

    try:
        manifest = RunManifest.read(rp)
    except Exception:  # noqa: BLE001 - a damaged manifest only loses the link to the run
        manifest = None
    al.run_id = getattr(manifest, "run_id", None)
    al.notes.extend(hl.warnings[:20])
    if len(hl.reviewers) > 1:
        al.notes.append(f"{len(hl.reviewers)} reviewers: their consensus (a strict majority) is used; "
                        f"{len(hl.no_consensus)} case(s) had none and are left out")
    elif hl.no_consensus:
        al.notes.append(f"{len(hl.no_consensus)} case(s) without consensus: left out")
    if al.written and (final is not None or fit is not None):
        chosen = [Example(id=e["id"], label=e["label"], rationale=e.get("rationale"), case=e["case"])
                  for e in (fit.examples if fit is not None else [])]
        al.aligned = AlignedJudge(
            method=list(methods), judge=_judge_ref(rp),
            map=None if final is None else MapSpec(knots=final.knots, levels=final.levels,
                                                   pass_mark=None if math.isnan(mark) else mark,
                                                   human_scale=human_scale),
            examples=chosen, prompt=fit.text if fit is not None else None,
            prompt_part=fit.part if fit is not None and fit.text is not None else None,
            prompt_diff=fit.diff if fit is not None else None, label_kind=al.kind,
            optimizer_model=optimizer.provider.model if optimizer is not None else None,
            labels=LabelsRef(path=Path(hl.path).name, sha256=hl.sha256, n=al.n_labels, reviewers=hl.reviewers,
                             no_consensus=len(hl.no_consensus)),
            split=SplitRef(seed=al.split.seed, holdout=al.split.holdout, grouped=al.split.grouped,
                           heldout_ids=al.split.heldout),
            heldout=al.figures.to_dict())
    return al

