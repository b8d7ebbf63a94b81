"""The pairwise leaderboard as HTML: a fragment (``<section>``) other reports can include, or a standalone page.

Computes nothing: it renders a :class:`referee.stats._ranking.Leaderboard` and optional bias reports. System
names and notes come from user files, so everything goes through Jinja2 autoescaping; no script, no CDN.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jinja2

from .._version import __version__
from ..metaeval._pairwise import BiasReport
from ..stats._bootstrap import Interval
from ..stats._ranking import Leaderboard
from ._safe import CSP, finalize

_FRAGMENT = """\
<section class="referee-leaderboard">
<h2>{{ title }}</h2>
<p>{{ lb.n_comparisons }} scored comparison(s). Ratings: Bradley-Terry on an Elo-like scale (mean system = 0),
95% percentile bootstrap intervals over comparisons. Ties count as half a win.</p>
{% if standings %}
<table>
<thead><tr><th>rank</th><th>system</th><th>rating</th><th>95% CI</th><th>win rate</th><th>95% CI</th>
<th>comparisons</th></tr></thead>
<tbody>
{% for s in standings %}
<tr><td>{{ loop.index }}</td><td>{{ s.system }}</td><td>{{ s.rating }}</td><td>{{ s.rating_ci }}</td>
<td>{{ s.win_rate }}</td><td>{{ s.win_rate_ci }}</td><td>{{ s.comparisons }}</td></tr>
{% endfor %}
</tbody></table>
{% endif %}
{% if pairs %}
<h3>Head to head</h3>
<table>
<thead><tr><th>A</th><th>B</th><th>A wins</th><th>B wins</th><th>ties</th><th>win rate of A</th><th>95% CI</th></tr>
</thead><tbody>
{% for p in pairs %}
<tr><td>{{ p.a }}</td><td>{{ p.b }}</td><td>{{ p.wins_a }}</td><td>{{ p.wins_b }}</td><td>{{ p.ties }}</td>
<td>{{ p.rate }}</td><td>{{ p.ci }}</td></tr>
{% endfor %}
</tbody></table>
{% endif %}
{% if by_reconcile %}
<h3>Win rate of A under both reconciliation rules</h3>
<p>This leaderboard: <b>{{ reconcile }}</b>. strict: orders that disagree (a tie against a win included) are a
tie; average: the mean of both orders (a win and a tie is 0.75).</p>
<table>
<thead><tr><th>A</th><th>B</th><th>strict</th><th>average</th></tr></thead><tbody>
{% for r in by_reconcile %}
<tr><td>{{ r.a }}</td><td>{{ r.b }}</td><td>{{ r.strict }}</td><td>{{ r.average }}</td></tr>
{% endfor %}
</tbody></table>
{% endif %}
{% if bias %}
<h3>Judge bias (both orders)</h3>
<table>
<thead><tr><th>results</th><th>pairs</th><th>no verdict</th><th>consistent</th><th>picks first shown</th><th>picks second shown</th>
<th>prefers longer (pairs)</th></tr></thead><tbody>
{% for b in bias %}
<tr><td>{{ b.name }}</td><td>{{ b.n }}</td><td>{{ b.unparsed }}</td><td>{{ b.consistent }}</td><td>{{ b.first }}</td><td>{{ b.second }}</td>
<td>{{ b.longer }}</td></tr>
{% endfor %}
</tbody></table>
{% endif %}
{% for note in notes %}<p class="note">note: {{ note }}</p>{% endfor %}
</section>
"""

_PAGE = """\
<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{ csp }}">
<title>{{ title }}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:right}
td:nth-child(2),th:nth-child(2){text-align:left}
.note{color:#8a5a00}
footer{color:#777;font-size:.85em}
</style></head>
<body>
{{ fragment }}
<footer>referee {{ version }}</footer>
</body></html>
"""


def _env() -> jinja2.Environment:
    return jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, finalize=finalize)


def _num(x: float | None, digits: int) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _ci(iv: Interval, digits: int) -> str:
    if iv.lo is None or iv.hi is None:
        return "n/a" if iv.estimate is None else f"none (n={iv.n})"
    text = f"[{iv.lo:.{digits}f}, {iv.hi:.{digits}f}]"
    # A one-sided sample bootstraps to [1, 1] or [0, 0]: say so rather than imply certainty.
    return text + (" (zero-width: one-sided sample)" if iv.hi - iv.lo == 0 else "")


def _share(iv: Interval | None) -> str:
    if iv is None or iv.estimate is None:
        return "n/a"
    return f"{iv.estimate:.3f} {_ci(iv, 3)}"


def context(lb: Leaderboard, bias: Mapping[str, BiasReport] | None = None) -> dict[str, Any]:
    """Display-ready values (strings) for the templates."""
    standings = [{"system": s.system, "rating": _num(s.rating.estimate, 0) + (f" ({s.one_sided})" if s.one_sided
                                                                          else ""),
                  "rating_ci": _ci(s.rating, 0),
                  "win_rate": _num(s.win_rate.estimate, 3), "win_rate_ci": _ci(s.win_rate, 3),
                  "comparisons": s.comparisons} for s in lb.standings]
    pairs = [{"a": p.a, "b": p.b, "wins_a": p.wins_a, "wins_b": p.wins_b, "ties": p.ties,
              "rate": _num(p.win_rate_a.estimate, 3), "ci": _ci(p.win_rate_a, 3)} for p in lb.pairs]
    brows = [{"name": name, "n": b.n, "unparsed": b.unparsed, "consistent": _share(b.consistent), "first": _share(b.first),
              "second": _share(b.second),
              "longer": f"{_share(b.judge_prefers_longer)} ({b.length_pairs})"} for name, b in (bias or {}).items()]
    notes = [*lb.notes, *sorted({f"{name}: {n}" for name, b in (bias or {}).items() for n in b.notes})]
    return {"lb": lb, "standings": standings, "pairs": pairs, "bias": brows, "notes": notes}


def _reconcile_rows(boards: Mapping[str, Leaderboard] | None) -> list[dict[str, str]]:
    if not boards or "strict" not in boards or "average" not in boards:
        return []
    avg = {(p.a, p.b): p for p in boards["average"].pairs}
    return [{"a": p.a, "b": p.b, "strict": _share(p.win_rate_a),
             "average": _share(avg[(p.a, p.b)].win_rate_a) if (p.a, p.b) in avg else "n/a"}
            for p in boards["strict"].pairs]


def leaderboard_fragment(lb: Leaderboard, *, title: str = "Leaderboard",
                         bias: Mapping[str, BiasReport] | None = None,
                         by_reconcile: Mapping[str, Leaderboard] | None = None, reconcile: str = "strict") -> str:
    """A ``<section>`` to include in another HTML report (already escaped; mark it safe there).
    ``by_reconcile``: the leaderboards under both pairwise reconciliation rules, shown side by side."""
    return _env().from_string(_FRAGMENT).render(title=title, by_reconcile=_reconcile_rows(by_reconcile),
                                                reconcile=reconcile, **context(lb, bias))


def leaderboard_page(lb: Leaderboard, *, title: str = "referee leaderboard",
                     bias: Mapping[str, BiasReport] | None = None,
                     by_reconcile: Mapping[str, Leaderboard] | None = None, reconcile: str = "strict") -> str:
    """A standalone, offline HTML page."""
    frag = leaderboard_fragment(lb, title=title, bias=bias, by_reconcile=by_reconcile, reconcile=reconcile)
    return _env().from_string(_PAGE).render(title=title, fragment=jinja2.utils.markupsafe.Markup(frag),
                                            version=__version__, csp=jinja2.utils.markupsafe.Markup(CSP))
