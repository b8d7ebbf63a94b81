"""The self-contained HTML report: one offline file (no CDN, no script), any results file.

It shows a summary, per-criterion scores with ungrounded and unscored counts, score distributions as inline
SVG charts, and per case the rationales, the evidence quotes and the judged text with the quotes
highlighted. All case text goes through Jinja2 autoescaping: highlighting splits the *raw* text into
segments and the template escapes every segment before wrapping it in ``<mark>``, so case text can never
become markup.
"""

from __future__ import annotations

import datetime as _dt
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import markupsafe

from .._util._image import ImageError, image_of, images_in, plain
from .._version import __version__
from ..evaluators._evidence import Locator
from ..results._schema import ResultRow
from ..rubrics._model import SCALES
from ._claims import claims_table
from ._safe import CSP, finalize

_TEMPLATES = Path(__file__).parent / "templates"
HIST_BINS = 10


@dataclass
class Segment:
    text: str
    labels: list[str] = field(default_factory=list)
    ungrounded: bool = False


def highlight_segments(text: str, quotes: Iterable[tuple[str, str]], locator: Locator | None = None
                       ) -> list[Segment]:
    """Split ``text`` into plain and quoted segments. ``quotes`` are (label, quote) pairs; overlapping
    matches are merged and carry every label. Nothing is escaped here: the template escapes each segment.
    ``locator``: the text's own, when the caller has made one already (it normalises the text once)."""
    spans: list[tuple[int, int, str]] = []
    for label, quote in quotes:
        locator = locator or Locator(text)
        for s, e in locator.spans(quote):
            spans.append((s, e, label))
    if not spans:
        return [Segment(text)] if text else []
    spans.sort()
    merged: list[tuple[int, int, list[str]]] = []
    for s, e, label in spans:
        if merged and s < merged[-1][1]:
            ps, pe, labels = merged[-1]
            merged[-1] = (ps, max(pe, e), labels if label in labels else [*labels, label])
        else:
            merged.append((s, e, [label]))
    out: list[Segment] = []
    pos = 0
    for s, e, labels in merged:
        if s > pos:
            out.append(Segment(text[pos:s]))
        out.append(Segment(text[s:e], labels))
        pos = e
    if pos < len(text):
        out.append(Segment(text[pos:]))
    return out


def shown_images(text: str) -> list[dict[str, str]]:
    """The images in the judged text, each as the page shows it: an inline one as a ``data:`` URL of checked
    bytes (the CSP allows ``img-src data:`` only), a remote one as a link that is never loaded."""
    try:
        images = images_in(text)
    except ImageError:
        return []
    return [{"label": i.label, "src": i.data_url() if i.data is not None else "",
             "url": "" if i.data is not None else i.url or ""} for i in images]


def histogram(values: Sequence[float], lo: float = 0.0, hi: float = 1.0, bins: int = HIST_BINS) -> list[int]:
    counts = [0] * bins
    for v in values:
        i = int((v - lo) / (hi - lo) * bins) if hi > lo else 0
        counts[min(bins - 1, max(0, i))] += 1
    return counts


def _discrete_counts(values: Sequence[float], lo: int, hi: int) -> list[tuple[str, int]]:
    c = Counter(round(v) for v in values)
    return [(str(k), c.get(k, 0)) for k in range(lo, hi + 1)]


def _criterion_summary(rows: Sequence[ResultRow]) -> list[dict[str, Any]]:
    order: dict[str, dict[str, Any]] = {}
    for r in rows:
        for c in r.criteria:
            s = order.setdefault(c.id, {"id": c.id, "name": c.name or c.id, "scale": c.scale, "weight": c.weight,
                                        "critical": bool(c.critical), "raw": [], "norm": [], "passed": 0,
                                        "failed": 0, "ungrounded": 0, "unscored": 0, "n": 0})
            s["n"] += 1
            if c.status != "scored" or c.score is None:
                s["unscored"] += 1
            else:
                s["norm"].append(c.score)
                if c.raw_score is not None:
                    s["raw"].append(c.raw_score)
            if c.passed is True:
                s["passed"] += 1
            elif c.passed is False:
                s["failed"] += 1
            if c.grounded is False:
                s["ungrounded"] += 1
    out = []
    for s in order.values():
        s["mean_norm"] = statistics.fmean(s["norm"]) if s["norm"] else None
        s["mean_raw"] = statistics.fmean(s["raw"]) if s["raw"] else None
        bounds = SCALES.get(s["scale"] or "")
        if bounds is not None and bounds[2]:  # an integer scale: one bar per point, even when nothing was scored
            s["dist"] = _discrete_counts(s["raw"], int(bounds[0]), int(bounds[1]))
        else:
            s["dist"] = [(f"{i / HIST_BINS:.1f}", n) for i, n in enumerate(histogram(s["norm"]))]
        out.append(s)
    return out


def _verdict_label(d: Mapping[str, Any]) -> str | None:
    """The rubric verdict band, or the gold verdict with its grade."""
    verdict, grade = d.get("verdict"), d.get("grade")
    if verdict and grade:
        return f"{verdict} (grade {grade})"
    return str(verdict or grade) if (verdict or grade) else None


def case_images(case: Any, shown: set[str] | None = None) -> list[dict[str, Any]]:
    """Every image of a case (input, output, contexts, reference, turns, tool results: any field but
    ``metadata``), as :func:`shown_images` shows them, each labelled with its field. An image is embedded once:
    where it stands again (in this case, or in a case already in ``shown``, the report's SHA-256s so far) it is
    named as the same image, not embedded again (a case naming one 19 MB image 20 times is one copy in the page)."""
    out: list[dict[str, Any]] = []
    shown = set() if shown is None else shown
    decoded: dict[int, tuple[Any, Any]] = {}  # parts sharing one base64 text (a loaded case's) decoded once

    def walk(value: Any, where: str, depth: int) -> None:
        if isinstance(value, dict) and value.get("type") == "image":
            data = value.get("data")
            hit = decoded.get(id(data))
            try:
                img = hit[1] if hit is not None and hit[0] is data else image_of(value)
            except ImageError:
                return
            decoded[id(data)] = (data, img)
            if img.data is not None and img.sha256 in shown:
                out.append({"label": f"{where}: {img.label}", "src": "", "url": "", "same": True})
                return
            shown.add(img.sha256)
            out.append({"label": f"{where}: {img.label}", "src": img.data_url() if img.data is not None else "",
                        "url": "" if img.data is not None else img.url or ""})
        elif isinstance(value, dict) and depth < 16:
            for k, v in value.items():
                walk(v, f"{where}.{k}", depth + 1)
        elif isinstance(value, list) and depth < 16:
            for i, v in enumerate(value):
                walk(v, f"{where}[{i}]", depth + 1)

    for key, value in getattr(case, "data", {}).items():
        if key != "metadata":
            walk(value, key, 0)
    return out


def _again(images: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A case's images for a second row of it (a repeat): named, not embedded again."""
    return [{**i, "src": "", "same": True} if i.get("src") else i for i in images]


def _case_view(row: ResultRow, case_text: str | None,
               images_of_case: list[dict[str, str]] | None = None) -> dict[str, Any]:
    d = row.details
    claims = claims_table(d, None)  # the chunks' text is added by render_html, which has the cases
    text = d.get("text") if isinstance(d.get("text"), str) else case_text
    checks = d.get("evidence_checks", {}) if isinstance(d.get("evidence_checks"), Mapping) else {}
    quotes: list[tuple[str, str]] = []
    crits = []
    for c in row.criteria:
        found = {q.get("quote"): q.get("found") for q in checks.get(c.id, []) if isinstance(q, Mapping)}
        evidence = [{"quote": q, "found": found.get(q, c.grounded)} for q in c.evidence]
        # Only verified quotes are highlighted: a quote that was not found must not look like evidence. A claim's
        # quotes come from the chunks, not the judged text: they are marked in their chunk in the claims table.
        if claims is None:
            quotes += [(c.id, str(e["quote"])) for e in evidence if e["found"] is not False]
        crits.append({"c": c, "evidence": evidence})
    images = shown_images(text) if text else []
    if text and images:
        text = plain(text)
    if images_of_case is not None:  # the whole case's images, the output's among them
        images = images_of_case
    segments = highlight_segments(text, quotes) if text else []
    label = _verdict_label(d)
    return {
        "images": images,
        "show_pass": not (label or "").startswith(("PASS", "FAIL")),
        "row": row, "criteria": crits, "segments": segments, "has_text": bool(text), "claims": claims,
        "verdict": label, "composite": d.get("composite"),
        "summary": d.get("summary"), "actions": d.get("required_actions") or [], "task": d.get("task"),
        "self_grading": d.get("self_grading"), "extra": {k: d[k] for k in ("total_score", "max_score",
                                                                           "criteria_passed", "criteria_total",
                                                                           "critical_failures", "verdict_reason",
                                                                           "verdict_text")
                                                         if k in d},
    }


def build_context(rows: Sequence[ResultRow], *, title: str, source: str = "",
                  case_texts: Mapping[str, str] | None = None, manifest: Any = None,
                  case_images: Mapping[str, list[dict[str, str]]] | None = None) -> dict[str, Any]:
    from ..aggregate._summary import as_table, score_distribution, summarize

    case_texts = case_texts or {}
    # Counts, mean, median and histogram come from the one aggregator: the report and `referee score` agree.
    table = as_table(list(rows))
    summary = summarize(table)
    overall = summary.overall
    median, hist = score_distribution(table, bins=HIST_BINS)
    scored = [r for r in rows if r.status == "scored" and r.score is not None]
    passed = [r for r in rows if r.passed is True]
    failed = [r for r in rows if r.passed is False]
    verdicts = Counter(v for r in scored if (v := _verdict_label(r.details)))
    judges = sorted({f"{r.judge.provider}/{r.judge.model}" for r in rows if r.judge})
    self_rows = [r for r in rows if "self_grading" in r.flags]
    sut = getattr(manifest, "system_under_test", None)
    judge_model = getattr(getattr(manifest, "judge", None), "model", None)
    from ..results._self_grading import same_model

    manifest_self = bool(sut) and any(same_model(judge_model, m) for m in str(sut).split(","))
    lowest = sorted(scored, key=lambda r: r.score if r.score is not None else 0.0)[:3]
    row_images: list[list[dict[str, Any]] | None] = []
    seen_ids: set[str] = set()
    for r in rows:  # a case's images embedded with its first row; a repeat's row names them
        imgs = (case_images or {}).get(r.id)
        row_images.append(imgs if imgs is None or r.id not in seen_ids else _again(imgs))
        seen_ids.add(r.id)
    return {
        "title": title, "source": source, "version": __version__,
        "generated": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "n": overall.rows, "n_scored": overall.cases, "n_unscored": overall.unscored,
        "n_error": overall.errors, "n_passed": len(passed), "n_failed": len(failed),
        "n_unscored_failed": sum(r.status != "scored" and r.passed is False for r in rows),
        "mean": overall.mean.estimate, "median": median,
        "n_ungrounded": sum("ungrounded" in r.flags or any(c.grounded is False for c in r.criteria) for r in rows),
        "n_self": len(self_rows), "manifest_self": manifest_self, "sut": sut, "judge_model": judge_model,
        "self_models": sorted({r.judge.model for r in self_rows if r.judge}),
        "judges": judges, "verdicts": sorted(verdicts.items()),
        "hist_pairs": [(f"{i / HIST_BINS:.1f}", n) for i, n in enumerate(hist)],
        "criteria": _criterion_summary(rows), "lowest": lowest,
        "cases": [_case_view(r, case_texts.get(r.id), images) for r, images in zip(rows, row_images, strict=True)],
        "charts": _charts(rows, summary),
    }


def _charts(rows: Sequence[ResultRow], s: Any) -> list[dict[str, Any]]:
    """The viewer's charts (``_charts``: escaped SVG, no script), beside the score distribution above."""
    from ._charts import Rate, histogram, rate_bars

    cats = [Rate(g.name, g.pass_rate.estimate, g.pass_rate.lo, g.pass_rate.hi, g.cases) for g in s.categories]
    charts = [rate_bars(cats, title="Pass rate per category (95% interval)", chart_id="categories"),
              histogram([r.cost_usd for r in rows], title="Cost per row", unit="$", chart_id="cost",
                        colour="#8e6c8a"),
              histogram([r.latency_ms for r in rows], title="Latency per row", unit=" ms", chart_id="latency",
                        colour="#b7791f")]
    return [{"id": c.id, "title": c.title, "svg": markupsafe.Markup(c.svg)} for c in charts]


def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(_TEMPLATES)),
                             autoescape=jinja2.select_autoescape(["html", "j2"], default=True),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             finalize=finalize)  # bidi controls visible, control characters dropped
    env.filters["fmt"] = lambda v, nd=2: "-" if v is None else f"{v:.{nd}f}"
    return env


def render_html(rows: Sequence[ResultRow], *, title: str = "referee report", source: str = "",
                case_texts: Mapping[str, str] | None = None, manifest: Any = None,
                extra_sections: Sequence[str] = (), cases: Iterable[Any] | None = None,
                panels: Sequence[Any] = ()) -> str:
    """The report as one HTML string. ``extra_sections`` are HTML fragments that other renderers already
    escaped (the pairwise leaderboard), placed after the summary. ``cases``: the cases, whose images (in any
    field) are shown with each row, and the chunks a claim's quote came from. ``panels``: a judge panel's figures
    (:func:`referee.calibrate.panel_agreement` over the same rows), shown after the summary."""
    from ._panel_sections import panel_view

    cases = list(cases or ())
    shown: set[str] = set()  # each distinct image embedded once in the page
    images = {str(c.id): found for c in cases if (found := case_images(c, shown))}
    ctx = build_context(rows, title=title, source=source, case_texts=case_texts, manifest=manifest,
                        case_images=images)
    by_id = {str(c.id): c for c in cases}
    for cv in ctx["cases"]:
        if cv["claims"] is not None and cv["row"].id in by_id:
            cv["claims"] = claims_table(cv["row"].details, by_id[cv["row"].id])
    ctx["extra_sections"] = [markupsafe.Markup(x) for x in extra_sections]
    ctx["panels"] = [panel_view(p) for p in panels]
    return _env().get_template("report.html.j2").render(**ctx, csp=markupsafe.Markup(CSP))


def write_html(rows: Sequence[ResultRow], path: str | Path, **kwargs: Any) -> Path:
    """Write the self-contained HTML report of ``rows`` to ``path`` (see :func:`render_html`); returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(render_html(rows, **kwargs), encoding="utf-8")
    return p
