"""The coverage report of a generation run as a plain-text table (cases per document, per kind, per persona; each
kind's target share beside its kept share), at most 80 columns wide."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._run import SynthResult


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else "..." + text[-(width - 3):]


def coverage_table(result: SynthResult, width: int = 80) -> str:
    """Kept cases per document, per kind (kept share / target share) and per persona, at most ``width`` wide."""
    width = max(40, width)
    name_w = width - 2 - 8 - 2 - 16 - 2
    lines = [f"{'':<2}{'':<{name_w}}  {'cases':>8}  {'share':>16}"]
    cov = result.coverage()
    total = len(result.cases) or 1
    for section, title in (("document", "per document (a two-chunk case counts for each of its documents)"), ("kind", "per kind (kept / target)"),
                           ("persona", "per persona")):
        rows = cov[section]
        if section == "kind":
            rows = {k: rows.get(k, 0) for k in result.kinds}
        if not rows:
            continue
        lines.append(_cut(title, width))
        for name, count in sorted(rows.items(), key=lambda kv: (-kv[1], kv[0])) if section != "kind" else rows.items():
            share = f"{count / total:>6.0%}"
            if section == "kind":
                share = f"{count / total:>6.0%} / {result.kinds[name]['target']:>6.0%}"
            lines.append(f"  {_cut(name, name_w):<{name_w}}  {count:>8}  {share:>16}")
    return "\n".join(line.rstrip() for line in lines)


def gate_lines(result: SynthResult) -> list[str]:
    """The rejections per gate, in the gates' order, and the totals, as short lines."""
    out = [f"{result.candidates} candidates in {result.rounds} round{'s' if result.rounds != 1 else ''}; "
           f"{len(result.cases)} of {result.requested} kept"]
    for gate, count in result.rejections.items():
        out.append(f"  rejected by {gate:<13} {count:>6}")
    if result.unfilled:
        out.append(f"  unfilled slots (invalid or short replies) {result.unfilled}")
    if result.surplus:
        out.append(f"  passed every gate beyond the count (not written) {result.surplus}")
    return out
