"""A Markdown summary for a pull-request comment or GitHub's step summary (``$GITHUB_STEP_SUMMARY``)."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._util._image import contains_image
from ..aggregate._format import ci_range, num, pct
from ..aggregate._summary import CaseLine, Group, Summary
from ..gates._engine import GateResult
from ._safe import display_text

# Markdown syntax that would turn case text into links, images, emphasis or code in a PR comment.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!~|])")


def _cell(text: object, limit: int = 160) -> str:
    """Case text is data: escape HTML and Markdown syntax (links, images, emphasis, table pipes), defuse
    @mentions (a PR comment would notify people), keep one line."""
    s = " ".join(display_text(str(text)).split())
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    s = _MD_SPECIAL.sub(r"\\\1", html.escape(s, quote=False))
    # An invisible word joiner after @ keeps the text readable but stops GitHub from pinging anyone; bare
    # URLs would still autolink, so their scheme separator and "www." are broken the same way.
    return s.replace("@", "@\u2060").replace("://", ":\u2060//").replace("www.", "www\u2060.")


def _rule(s: Summary) -> str:
    if s.pass_rule == "evaluator":
        return f"pass by the evaluator's own verdict (score ≥ {s.threshold:g} where a row has none)"
    return f"at threshold {s.threshold:g}"


def _group_row(g: Group) -> str:
    return (f"| {_cell(g.name)} | {g.cases} | {pct(g.pass_rate.estimate)} | "
            f"{ci_range(g.pass_rate.lo, g.pass_rate.hi, True)} | {num(g.mean.estimate)} | "
            f"{g.unscored + g.errors} | {num(g.mean_cost, 5)} | {num(g.mean_latency_ms, 0)} |")


def _cases(title: str, cases: list[CaseLine], images: Mapping[str, list[str]] | None = None) -> list[str]:
    if not cases:
        return []
    shown = images if images and any(images.get(c.id) for c in cases) else None
    out = [f"**{title}**", "", "| case | category | score | rationale |" + (" images |" if shown else ""),
           "|---|---|---|---|" + ("---|" if shown else "")]
    for c in cases:
        line = f"| {_cell(c.id, 80)} | {_cell(c.category)} | {num(c.score)} | {_cell(c.rationale or '')} |"
        if shown:
            line += f" {', '.join(shown.get(c.id, [])[:4])} |"
        out.append(line)
    return out + [""]


def _url(url: str) -> str | None:
    """An http(s) URL safe inside a Markdown link target (None: not one to link)."""
    if not re.match(r"^https?://[^\s]+$", url, re.IGNORECASE) or len(url) > 2000:
        return None
    return re.sub(r"[()<>\[\]|\\`\"']", lambda m: f"%{ord(m.group(0)):02X}", url)


def image_refs(cases: Iterable[Any]) -> dict[str, list[str]]:
    """Per case id, its images as the Markdown summary names them: a remote image as a link (never embedded),
    an inline one by name, format, size and hash (a PR comment cannot show a ``data:`` URL)."""
    out: dict[str, list[str]] = {}
    for case in cases:
        data = getattr(case, "data", None)
        if not isinstance(data, dict) or not any(contains_image(v) for k, v in data.items() if k != "metadata"):
            continue
        refs: list[str] = []
        for key, value in data.items():
            if key != "metadata":
                _collect(value, key, refs)
        out[str(case.id)] = refs
    return out


def _collect(value: Any, where: str, refs: list[str], depth: int = 0) -> None:
    if isinstance(value, dict) and value.get("type") == "image":
        name = _cell(str(value.get("name") or where), 60)
        url = _url(str(value.get("url") or ""))
        if url is not None:
            refs.append(f"[{name}]({url})")
        elif value.get("data"):
            size = f" {value['width']}x{value['height']}" if value.get("width") and value.get("height") else ""
            kind = str(value.get("media_type", "")).removeprefix("image/")
            refs.append(f"{name} ({_cell(kind, 10)}{size}, sha256 {_cell(str(value.get('sha256', ''))[:12], 12)})")
    elif isinstance(value, dict) and depth < 16:
        for k, v in value.items():
            _collect(v, f"{where}.{k}", refs, depth + 1)
    elif isinstance(value, list) and depth < 16:
        for i, v in enumerate(value):
            _collect(v, f"{where}[{i}]", refs, depth + 1)


def render_markdown(s: Summary, gates: list[GateResult], exit_code: int, *,
                    images: Mapping[str, list[str]] | None = None, panels: Sequence[Any] = ()) -> str:
    """``referee score``'s Markdown summary (``--markdown``, ``$GITHUB_STEP_SUMMARY``): rates, gates, the
    baseline verdict and the worst cases, with every piece of case text escaped. ``images`` (from
    :func:`image_refs`): the cases' images, linked or named beside the cases listed. ``panels``: a judge
    panel's figures (:func:`referee.calibrate.panel_agreement` over the same rows)."""
    from ._panel_sections import panel_markdown

    comp = s.comparison
    failed = [g for g in gates if g.failed]
    status = "❌ gate failed" if exit_code == 1 else "✅ passed"
    head = f"### referee score: {status}"
    if comp:
        head += f" · verdict **{comp.verdict}**"
    lines = [head, ""]
    o = s.overall
    lines.append(f"Pass rate **{pct(o.pass_rate.estimate)}** "
                 f"(95% CI {ci_range(o.pass_rate.lo, o.pass_rate.hi, True)}), "
                 f"mean **{num(o.mean.estimate)}** over {o.cases} cases, {_rule(s)}"
                 + (f"; {o.unscored + o.errors} rows unscored" if o.unscored + o.errors else "") + ".")
    lines.append("")
    if s.self_grading:
        lines += [f"> ⚠️ **Self-grading caveat:** {_cell(s.self_grading, 300)}.", ""]
    lines += ["| category | cases | pass rate | 95% CI | mean | unscored | mean cost | mean latency ms |",
              "|---|---|---|---|---|---|---|---|"]
    lines += [_group_row(g) for g in [*s.categories, o]]
    lines.append("")
    if o.mean_cost is not None or o.mean_latency_ms is not None:
        lines += [("Mean cost and latency are over every row, unscored and error rows included."
                   if s.cost_rows == "all" else "Mean cost and latency are over scored rows only."), ""]
    if comp:
        b = comp.baseline_overall
        lines.append(f"Against the baseline ({comp.shared} shared cases): "
                     f"pass rate {pct(b.pass_rate.estimate)} → "
                     f"{pct(o.pass_rate.estimate)}; {comp.regression_count} regressed, {comp.fixed} fixed. "
                     f"{_cell(comp.verdict_reason, 300)}.")
        lines.append("")
        if comp.lost_scores:
            lines += [f"{len(comp.lost_scores)} case(s) passed in the baseline and are unscored now (neither a "
                      f"pass nor a fail): {_cell(', '.join(comp.lost_scores[:10]), 400)}", ""]
        lines += _cases(f"Regressions ({comp.regression_count})", comp.regressions[:10], images)
        lines += _cases(f"Adversarial regressions ({len(comp.adversarial_regressions)})",
                        comp.adversarial_regressions[:10])
    lines += _cases("Lowest-scoring cases", s.lowest, images)
    if s.adversarial:
        lines += ["**Adversarial (per attack type; not in the numbers above)**", "",
                  "| attack type | cases | pass rate | 95% CI | mean | unscored | mean cost | mean latency ms |",
                  "|---|---|---|---|---|---|---|---|"]
        lines += [_group_row(g) for g in s.adversarial] + [""]
    lines += panel_markdown(panels, lambda t: _cell(t, 400))
    if gates:
        lines += ["| gate | result | detail |", "|---|---|---|"]
        for g in gates:
            res = "FAIL" if g.failed else ("pass" if g.evaluated else "skipped")
            lines.append(f"| `{g.flag}` | {res} | {_cell(g.message, 300)} |")
        lines.append("")
    if failed:
        lines.append(f"{len(failed)} gate(s) failed.")
    # Reviewers need the caveats that change how the numbers read: sample size, look-alike categories, and a
    # judge prompt or model that differs between the runs.
    warn = [w for w in s.warnings if w.startswith(("small sample", "categories")) or "--pass-rule" in w]
    warn = (comp.warnings if comp else []) + warn
    for w in warn[:6]:
        lines.append(f"> ⚠ {_cell(w, 300)}")
    return "\n".join(lines).rstrip() + "\n"


def write_markdown(md: str, path: str | Path | None, *, step_summary: str | None = None) -> str | None:
    """Write ``md`` to ``path`` (``--markdown``) and append it to ``step_summary`` (``$GITHUB_STEP_SUMMARY``:
    other steps write there too). That append is an automatic extra the user did not ask for: its failure is
    returned as a warning, never raised, so it cannot turn a gate result into exit 2. The parent folder of ``path``
    is created, as for every other output file (``--out``, ``--html``)."""
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(md)
    if step_summary:
        try:
            with open(step_summary, "a", encoding="utf-8") as f:
                f.write(md + "\n")
        except OSError as exc:
            return f"could not append to $GITHUB_STEP_SUMMARY ({step_summary}): {exc.strerror or exc}"
    return None
