"""What a :class:`Summary` and a :class:`Comparison` show in a notebook or a rich terminal (see
``_util._display``): the headline first, then compact tables with intervals."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util._display import Block, Table
from .._util._numbers import count

if TYPE_CHECKING:
    from ._model import CaseLine, Comparison, Group, Summary

_GROUP_HEADERS = ["group", "cases", "pass rate [95% CI]", "mean [95% CI]", "unscored", "errors"]


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _group_row(g: Group) -> list[str]:
    return [g.name, str(g.cases), str(g.pass_rate), str(g.mean), str(g.unscored), str(g.errors)]


def _case_table(title: str, cases: list[CaseLine], *, baseline: bool = False) -> Table:
    from ._load import UNCATEGORIZED

    cat = any(c.category != UNCATEGORIZED for c in cases)  # a column of "(uncategorized)" says nothing
    headers = ["id", *(["category"] if cat else []), "score", *(["baseline"] if baseline else []), "status",
               "rationale"]
    rows = [[c.id, *([c.category] if cat else []), _num(c.score), *([_num(c.baseline_score)] if baseline else []),
             c.status, c.rationale or ""] for c in cases]
    return Table(title, headers, rows)


def _only_overall(s: Summary) -> bool:
    from ._load import UNCATEGORIZED

    return len(s.categories) == 1 and s.categories[0].name == UNCATEGORIZED


def summary_headline(s: Summary) -> str:
    o = s.overall
    return (f"{count(o.cases, 'case')} scored: pass rate {o.pass_rate}, mean {o.mean}"
            + (f"; {o.unscored} unscored, {o.errors} errors" if o.unscored or o.errors else ""))


def summary_repr(s: Summary) -> str:
    return f"<Summary {summary_headline(s)}>"


def summary_blocks(s: Summary) -> list[Block]:
    # One category that is everything (no case has one) would only repeat the overall row.
    groups = [s.overall, *(s.categories if not _only_overall(s) else [])]
    blocks: list[Block] = [Table("", _GROUP_HEADERS, [_group_row(g) for g in groups])]
    if s.adversarial:
        blocks.append(Table("adversarial", _GROUP_HEADERS, [_group_row(g) for g in s.adversarial]))
    if s.lowest:
        blocks.append(_case_table("lowest cases", s.lowest))
    blocks += [f"warning: {w}" for w in s.warnings]
    if s.comparison is not None:
        blocks.append(comparison_headline(s.comparison))
        blocks += comparison_blocks(s.comparison)
    return blocks


def comparison_headline(c: Comparison) -> str:
    return f"against {c.baseline}: {c.verdict} ({c.verdict_reason})"


def comparison_repr(c: Comparison) -> str:
    return f"<Comparison {c.verdict}: {c.regression_count} regressions, {c.fixed} fixed, {c.shared} shared cases>"


def comparison_blocks(c: Comparison) -> list[Block]:
    blocks: list[Block] = [
        f"{c.shared} shared cases, {c.regression_count} regressions, {c.fixed} fixed"
        + (f", {len(c.missing)} missing" if c.missing else "") + (f", {len(c.added)} added" if c.added else ""),
    ]
    if c.tests:
        rows = [[t.scope, t.metric, str(t.n), f"{t.diff:+.3f}", f"[{_num(t.lo)}, {_num(t.hi)}]",
                 f"{t.p_value:.3g}", "n/a" if t.p_adjusted is None else f"{t.p_adjusted:.3g}",
                 "yes" if t.significant else "no"] for t in c.tests]
        blocks.append(Table("paired tests", ["scope", "metric", "n", "difference", "95% CI", "p", "p adjusted",
                                             "significant"], rows))
    if c.regressions:
        blocks.append(_case_table("regressions", c.regressions, baseline=True))
    blocks += [f"warning: {w}" for w in c.warnings]
    return blocks
