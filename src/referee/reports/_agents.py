"""The outcome of an agent command (``referee trajectory``, ``conversation``, ``redteam run``) on stderr: the
rows that did not pass with their reason (never an aggregate without examples), per category, the counts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..aggregate._model import Group
from ..aggregate._tally import Tally
from ..results._manifest import Totals
from ._safe import echo_err


def render_tally(t: Tally, totals: Totals, out: str | Path, *, categories: Sequence[Group] = (),
                 judged: bool = False, limit: int = 10) -> None:
    """The first ``limit`` rows that did not pass, then one line per category group (from
    :func:`referee.summarize`), then the totals line every run ends with (the run's ``totals``: judge calls
    when ``judged``, time), led by the passed and failed counts."""
    for r in t.not_passed[:limit]:
        what = f"{r.score:.2f}" if r.score is not None else r.status
        turn = f" turn {r.turn}" if r.turn is not None else ""
        echo_err(f"  {r.id}{turn} [{what}]: {r.rationale or r.error or ''}")
    if len(t.not_passed) > limit:
        echo_err(f"  ... and {len(t.not_passed) - limit} more (see {out})")
    for g in categories:
        n_pass = round((g.pass_rate.estimate or 0.0) * g.cases)
        rate = f"{g.pass_rate.estimate:.0%}" if g.pass_rate.estimate is not None else "n/a"
        echo_err(f"  {g.name:<20} {g.rows:>3} cases  pass {n_pass}/{g.cases} ({rate})"
                 f"  unscored {g.unscored}  error {g.errors}")
    from ..runner._session import totals_line

    echo_err(totals_line(totals, out, judged=judged, lead=f"{t.passed} passed, {t.failed} failed, "))
