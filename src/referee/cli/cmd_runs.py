"""``referee runs ...``: the run history (list, show, compare, trend, tag, export, import, delete, prune)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from ..aggregate import printable
from ..errors import UserError
from ..reports import display_text, echo_err, fit_columns, pad_columns

_STORE_OPT = click.option("--store", "store_url", default=None, metavar="URL",
                          help="The history to read: a SQLite file or sqlite:///path, or postgresql://... "
                               "(default: REFEREE_STORE, else .referee/history.sqlite).")
_JSON_OPT = click.option("--json", "as_json", is_flag=True,
                         help="Pure JSON on stdout (messages go to stderr).")


@contextmanager
def _opened(url: str | None, *, create: bool = False) -> Iterator[Any]:
    # Only `runs import` makes a store; the other commands read one, and say so when there is none.
    from ..store import current, open_store

    if url is None and not current().readable:
        raise UserError("the run history is off (REFEREE_STORE=off): give --store URL to read one")
    st = open_store(url, create=create)
    try:
        yield st
    finally:
        st.close()


def _get(st: Any, ref: str) -> Any:
    # A run id or prefix, else a name: last, @COMMIT, a branch (its newest complete run).
    from ..store import find_run

    run = find_run(st, ref)
    _say_damaged([run])
    return run


def _say_damaged(runs: Any) -> None:
    """A note per run whose stored values were not what their columns hold (read as missing)."""
    for r in runs:
        if r.problems:
            echo_err(printable(f"note: run {r.id[:12]} is damaged: {'; '.join(r.problems[:3])}; shown as missing "
                               "(`referee store check` says more)"))


def _one_line(v: Any) -> str:
    """``v`` as a table cell: control characters (ANSI escapes, and a newline or tab, which would break the row)
    as a replacement character, bidi controls as visible marks (they reorder the text shown around them)."""
    return display_text(_BREAKS.sub("\ufffd", printable("" if v is None else str(v))))


_BREAKS = re.compile(r"[\t\n\r]")


def _cell(v: Any, width: int) -> str:
    """``v`` on one line, cut to ``width`` terminal columns (a CJK suite name takes two a character)."""
    return str(fit_columns(_one_line(v), width))


def _col(v: Any, width: int) -> str:
    """:func:`_cell` padded to ``width`` columns."""
    return str(pad_columns(_one_line(v), width))


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


def _pct(v: float | None) -> str:
    return f"{100 * v:.1f}" if v is not None and _finite(v) else "-"


def _rate(est: Any, lo: Any, hi: Any) -> str:
    """A pass rate with its interval, or ``n/a`` when nothing was scored (never "-%")."""
    if not _finite(est):
        return "n/a"
    return f"{_pct(est)}% [{_pct(lo)}, {_pct(hi)}]"


def _mean(est: Any, lo: Any, hi: Any) -> str:
    if not _finite(est):
        return "n/a"
    return f"{_num(est)} [{_num(lo)}, {_num(hi)}]"


def _num(v: float | None) -> str:
    return f"{v:.3f}" if v is not None and _finite(v) else "-"


def _finite(v: Any) -> bool:
    # A stored summary's numbers come from the store, which may be damaged: anything else reads as missing.
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _status(r: Any) -> str:
    # A run still marked running was killed or is running now: not a complete run either way.
    return "incomplete" if r.status == "running" else r.status


def _when(iso: str | None) -> str:
    return printable((iso or "")[5:16].replace("T", " "))


def _is_sqlite_file(p: Path) -> bool:
    """Whether ``p`` is a SQLite file, by its first 16 bytes (a results file may be hundreds of MB)."""
    if not p.is_file():  # a folder, a missing file (results_files says what it is), never a pipe to block on
        return False
    try:
        with p.open("rb") as f:
            return f.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def run_json(r: Any) -> dict[str, Any]:
    return {"id": r.id, "suite": r.suite, "kind": r.kind, "branch": r.git_branch, "commit": r.git_commit,
            "dirty": r.git_dirty, "tags": r.tags, "status": r.status, "started_at": r.started_at,
            "finished_at": r.finished_at, "judge": r.judge, "results_path": r.results_path,
            "ci": {"provider": r.ci_provider, "commit": r.ci_commit, "ref": r.ci_ref, "run_id": r.ci_run_id},
            "summary": {"rows": r.n_rows, "scored": r.n_scored, "unscored": r.n_unscored, "error": r.n_error,
                        "pass_rate": r.pass_rate, "pass_rate_ci": [r.pass_rate_lo, r.pass_rate_hi],
                        "mean": r.mean, "mean_ci": [r.mean_lo, r.mean_hi], "cost_usd": r.cost_usd,
                        "input_tokens": r.input_tokens, "output_tokens": r.output_tokens, "wall_s": r.wall_s}}


def _dump(obj: Any) -> None:
    click.echo(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


@click.group("runs")
def command() -> None:
    """The run history: every run recorded as it ran (docs/store.md)."""


@command.command("list")
@_STORE_OPT
@click.option("--suite", default=None, help="Only runs of this suite: its name (or, with no name, its "
                                            "repository-relative path), or its file.")
@click.option("--branch", default=None, help="Only runs on this git branch.")
@click.option("--tag", default=None, help="Only runs with this tag.")
@click.option("--status", type=click.Choice(["complete", "incomplete", "running", "interrupted", "failed"]),
              default=None, help="Only runs with this status (incomplete, as the table shows it, is running: a run "
                                 "killed midway or running now).")
@click.option("--since", default=None, metavar="DATE",
              help="Only runs started at or after DATE: a date, or an ISO 8601 time (UTC unless it gives an offset).")
@click.option("--until", default=None, metavar="DATE",
              help="Only runs started at or before DATE (a date includes that whole day).")
@click.option("--limit", type=click.IntRange(1), default=None,
              help="At most N runs (default: 20 in the table, every run with --json).")
@_JSON_OPT
def list_cmd(store_url: str | None, suite: str | None, branch: str | None, tag: str | None, status: str | None,
             since: str | None, until: str | None, limit: int | None, as_json: bool) -> int:
    """Runs, newest first, in a table that fits 80 columns."""
    from ..store import current, display_url, list_runs, normalise_url, suite_named

    if store_url is None and not current().readable:
        raise UserError("the run history is off (REFEREE_STORE=off): give --store URL to read one")
    suite = suite_named(suite) if suite is not None else None
    shown = limit if limit is not None or as_json else 20
    status = "running" if status == "incomplete" else status  # the table's word for a run not marked complete
    runs = list_runs(store_url, suite=suite, branch=branch, tag=tag, status=status, since=since, until=until,
                     limit=shown)
    _say_damaged(runs)
    if as_json:
        _dump([run_json(r) for r in runs])
        return 0
    if not runs:
        url = normalise_url(store_url) if store_url else current().resolved_url()
        echo_err(f"no runs in {display_url(url)}" + (" match" if any((suite, branch, tag, status, since, until))
                                                     else ""))
        return 0
    click.echo(f"{'RUN':<8} {'SUITE':<12} {'BRANCH':<12} {'COMMIT':<8} {'STATUS':<10} {'PASS%':>6} "
               f"{'MEAN':>5} {'STARTED':<11}")
    for r in runs:
        commit = (r.git_commit or r.ci_commit or "-")[:7] + ("*" if r.git_dirty else "")
        click.echo(f"{r.id[:8]:<8} {_col(r.suite, 12)} {_col(r.git_branch or '-', 12)} "
                   f"{commit:<8} {_status(r):<10} {_pct(r.pass_rate):>6} "
                   f"{_num(r.mean)[:5]:>5} {_when(r.started_at):<11}")
    if limit is None and len(runs) == shown:
        echo_err(f"(the newest {shown}; --limit N for more, --json for every run; * = dirty tree)")
    return 0


@command.command("show")
@click.argument("run")
@_STORE_OPT
@_JSON_OPT
def show_cmd(run: str, store_url: str | None, as_json: bool) -> int:
    """One run: where it ran, its totals and summary, its tags."""
    from ..store import StoreError

    with _opened(store_url) as st:
        r = _get(st, run)
        try:
            summary = st.summary(r.id)
        except StoreError as exc:  # the run's columns still show; its groups are what is lost
            echo_err(f"note: {exc}")
            summary = None
        if as_json:
            _dump({**run_json(r), "groups": summary})
            return 0
        lines = [
            ("run", r.id), ("suite", r.suite or "-"), ("kind", r.kind), ("status", _status(r)),
            ("started", r.started_at), ("finished", r.finished_at or "-"),
            ("commit", (r.git_commit or "-") + (" (dirty tree)" if r.git_dirty else "")),
            ("branch", r.git_branch or "-"), ("remote", r.git_remote or "-"),
            ("ci", " ".join(x for x in (r.ci_provider, r.ci_ref, r.ci_run_id) if x) or "-"),
            ("judge", r.judge or "-"), ("tags", ", ".join(r.tags) or "-"), ("results", r.results_path or "-"),
            # A run's totals are written when it ends: one killed (or still running) has only its stored rows.
            ("rows", f"{st.count_rows(r.id)} stored so far (its totals are written when it completes)"
             if r.status == "running" else
             f"{r.n_rows} ({r.n_scored} scored, {r.n_unscored} unscored, {r.n_error} error)"),
            ("pass rate", _rate(r.pass_rate, r.pass_rate_lo, r.pass_rate_hi)
             + (f" (not complete: `referee score {r.id[:8]}` scores its rows)" if r.status == "running" else
                " (nothing scored)" if r.n_scored == 0 else
                " (every row is adversarial: see its attack types below)" if _all_adversarial(summary) else "")),
            ("mean", _mean(r.mean, r.mean_lo, r.mean_hi)),
            ("cost", "-" if r.cost_usd is None else f"${r.cost_usd:.4f}"),
            ("wall", "-" if r.wall_s is None else f"{r.wall_s:.1f}s"),
        ]
        for k, v in lines:
            click.echo(f"{k:<10} {_cell(v, 69)}")
        doc = summary if isinstance(summary, dict) else {}
        if _show_groups(r.id, doc.get("categories")) and doc.get("adversarial"):
            click.echo("adversarial track, per attack type (kept out of the pass rate and mean above)")
            _show_groups(r.id, doc.get("adversarial"))
    return 0


def _all_adversarial(summary: Any) -> bool:
    """A red-team run: its stored summary has an adversarial track and no correctness case."""
    if not isinstance(summary, dict) or not summary.get("adversarial"):
        return False
    overall = summary.get("overall")
    return isinstance(overall, dict) and overall.get("cases") == 0


def _show_groups(run_id: str, groups: Any) -> bool:
    """A stored summary's groups, one line each (at most 20); False when the summary is damaged (said once)."""
    for g in groups[:20] if isinstance(groups, list) else []:
        try:
            pr, mean = g["pass_rate"], g["mean"]
            line = (f"  {_col(g['name'], 20)} {_rate(pr[0], pr[1], pr[2]):<22} "
                    f"mean {_num(mean[0]) if _finite(mean[0]) else 'n/a'}  n={_cell(g['cases'], 9)}")
        except (KeyError, TypeError, IndexError, ValueError):  # a summary a damaged store holds
            echo_err(f"note: run {run_id[:12]}'s stored summary is damaged; `referee store check` says more")
            return False
        click.echo(line)
    return True


@command.command("compare")
@click.argument("baseline", required=False)
@click.argument("candidate", required=False)
@_STORE_OPT
@click.option("--suite", default=None,
              help="With no runs named: the newest run of this suite (default: the newest run of any).")
@click.option("--threshold", type=click.FloatRange(0, 1), default=None,
              help="A case passes when score >= this (default: the run's suite threshold, else 0.7).")
@click.option("--fail-on-regression", is_flag=True, help="Exit 1 when a case that passed in BASELINE fails.")
@click.option("--fail-on-significant-regression", is_flag=True,
              help="Exit 1 when the paired tests find a significant drop.")
@click.option("--allow-case-set-change", is_flag=True,
              help="Compare the shared cases when the two runs hold different ids (else exit 2 naming them).")
@click.option("--verbose", "-v", is_flag=True, help="The paired tests, power and more cases.")
def compare_cmd(baseline: str | None, candidate: str | None, store_url: str | None, suite: str | None,
                threshold: float | None, fail_on_regression: bool, fail_on_significant_regression: bool,
                allow_case_set_change: bool, verbose: bool) -> int:
    """CANDIDATE against BASELINE (run ids, or main, last, @COMMIT): what `referee score --baseline` prints:
    regressions, fixed cases, McNemar, the paired bootstrap. With no runs named, the newest complete run
    against the one before it of the same suite and configuration."""
    from ..aggregate import ScoreOptions, summarize
    from ..gates import GateConfig, evaluate_gates, exit_code, graded_counts, verdict, with_graded_check
    from ..reports import render_terminal
    from ..store import latest_pair, load_run, suite_named

    suite = suite_named(suite) if suite is not None else None
    if (baseline is None) != (candidate is None):
        raise click.UsageError("name two runs (BASELINE CANDIDATE), or none: the newest run against the one "
                               "before it")
    if suite is not None and baseline is not None:
        raise click.UsageError("--suite chooses the runs when none are named; the runs named here are chosen")
    with _opened(store_url) as st:
        if baseline is None or candidate is None:
            pair = latest_pair(st, suite=suite)
            _say_damaged(pair)
            b, c = load_run(st, pair[0].id), load_run(st, pair[1].id)
        else:
            b, c = load_run(st, _get(st, baseline).id), load_run(st, _get(st, candidate).id)
    if b.run_id == c.run_id:
        echo_err(f"note: {baseline!r} and {candidate!r} name the same run ({b.run_id[:12]})")
    if b.record.identity != c.record.identity:
        br, cr = b.record, c.record
        what = (f"suite: {br.suite!r} vs {cr.suite!r}" if br.suite != cr.suite
                else f"judge: {br.judge or 'none'} vs {cr.judge or 'none'}" if br.judge != cr.judge
                else "the evaluators' configuration")
        echo_err(f"note: the two runs differ in {what}")
    for role, r in (("baseline", b), ("candidate", c)):  # a line each: 80 columns
        echo_err(f"{role}: run {r.run_id[:12]} ({r.record.place()})")
    scoring = (c.manifest.extra.get("suite") or {}).get("scoring") if c.manifest is not None else None
    thr = threshold if threshold is not None else float((scoring or {}).get("threshold", 0.7))
    summary = summarize(c, ScoreOptions(threshold=thr, allow_case_set_change=allow_case_set_change), baseline=b)
    gates = evaluate_gates(summary, GateConfig(fail_on_regression=fail_on_regression,
                                               fail_on_significant_regression=fail_on_significant_regression))
    code = 0
    if gates:
        gates = with_graded_check(gates, summary)
        code = exit_code(verdict(gates, graded_counts(summary)[0]))
    render_terminal(summary, gates, code, verbose=verbose)
    return code


@command.command("trend")
@_STORE_OPT
@click.option("--suite", default=None, help="The suite (default: the newest run's).")
@click.option("--metric", type=click.Choice(["pass_rate", "mean"]), default="pass_rate", show_default=True)
@click.option("--by", type=click.Choice(["run", "commit"]), default="run", show_default=True,
              help="One point per run, or per commit (its newest complete run).")
@click.option("--branch", default=None, help="Only runs on this branch.")
@click.option("--limit", type=click.IntRange(1), default=30, show_default=True, help="The newest N points.")
@_JSON_OPT
def trend_cmd(store_url: str | None, suite: str | None, metric: str, by: str, branch: str | None, limit: int,
              as_json: bool) -> int:
    """A metric over time with its interval, read from each run's stored summary (no rows re-read)."""
    from ..store import suite_named

    suite = suite_named(suite) if suite is not None else None
    with _opened(store_url) as st:
        runs = st.list_runs(suite=suite, branch=branch, status="complete", limit=max(limit * 5, 200))
    if not runs:
        raise UserError("no complete runs" + (f" of suite {suite!r}" if suite else "") + " to show a trend of")
    identity = runs[0].identity
    if len({r.identity for r in runs}) > 1:
        echo_err(f"note: showing suite {runs[0].suite!r} with the configuration of run {runs[0].id[:12]}; "
                 "runs judged differently are left out")
    runs = [r for r in runs if r.identity == identity]
    _say_damaged(runs)
    if by == "commit":
        seen: set[str] = set()
        kept = []
        for r in runs:
            key = r.git_commit or r.id
            if key not in seen:
                seen.add(key)
                kept.append(r)
        runs = kept
    points = list(reversed(runs[:limit]))
    lo_name, hi_name = f"{metric}_lo", f"{metric}_hi"
    if as_json:
        _dump([{"run": r.id, "commit": r.git_commit, "branch": r.git_branch, "started_at": r.started_at,
                "metric": metric, "value": getattr(r, metric), "ci": [getattr(r, lo_name), getattr(r, hi_name)],
                "cases": r.n_scored} for r in points])
        return 0
    click.echo(f"{metric} of {_cell(runs[0].suite or '?', 76 - len(metric))}")
    click.echo("oldest first; [interval]; chart: one | per 5 points")
    click.echo(f"{'STARTED':<11} {'COMMIT':<7} {'RUN':<8} {'VALUE':>6} {'INTERVAL':<15} {'N':>5}  CHART")
    fmt: Callable[[float | None], str] = _pct if metric == "pass_rate" else _num
    for r in points:
        v, lo, hi = getattr(r, metric), getattr(r, lo_name), getattr(r, hi_name)
        bar = "" if v is None else "|" * round(20 * max(0.0, min(1.0, v)))
        interval = f"[{fmt(lo)}, {fmt(hi)}]"
        click.echo(f"{_when(r.started_at):<11} {(r.git_commit or '-')[:7]:<7} {r.id[:8]:<8} {fmt(v)[:6]:>6} "
                   f"{interval:<15} {r.n_scored:>5}  {bar}")
    if blank := [r for r in points if r.n_scored and getattr(r, metric) is None]:
        # Scored rows and no figure: every row is in the adversarial track, as `referee score` reads the run.
        echo_err(f"note: {_runs(len(blank))} {'has' if len(blank) == 1 else 'have'} scored rows but no {metric}: "
                 "every row is adversarial,\n  kept apart per attack type "
                 f"(`referee runs show {blank[-1].id[:8]}` lists them)")
    return 0


@command.command("tag")
@click.argument("run")
@click.argument("tags", nargs=-1, required=True)
@click.option("--remove", is_flag=True, help="Remove these tags instead of adding them.")
@_STORE_OPT
def tag_cmd(run: str, tags: tuple[str, ...], remove: bool, store_url: str | None) -> int:
    """Add (or --remove) TAGS on RUN."""
    from ..store import recording

    with recording(tags=tags) as settings:  # the one check of tags (non-empty, bounded)
        checked = settings.tags
    with _opened(store_url) as st:
        r = _get(st, run)
        if remove and (absent := [t for t in checked if t not in r.tags]):  # a typo removes nothing: said
            echo_err(printable(f"note: run {r.id[:12]} had no tag {', '.join(repr(t) for t in absent)}"))
        st.tag(r.id, add=() if remove else checked, remove=checked if remove else ())
        echo_err(f"run {r.id[:12]}: tags {printable(', '.join(st.get_run(r.id).tags)) or 'none'}")
    return 0


@command.command("export")
@click.argument("run")
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False), help="Results JSONL to write.")
@_STORE_OPT
def export_cmd(run: str, out: str, store_url: str | None) -> int:
    """Write RUN's rows and manifest as files, as the run wrote them."""
    from ..store import export_run

    with _opened(store_url) as st:
        path, n = export_run(st, _get(st, run).id, Path(out))
    echo_err(f"{n} rows -> {path}")
    return 0


@command.command("import")
@click.argument("sources", nargs=-1, required=True)
@_STORE_OPT
@click.option("--tag", "tags", multiple=True, help="Tag the imported runs (repeatable).")
def import_cmd(sources: tuple[str, ...], store_url: str | None, tags: tuple[str, ...]) -> int:
    """Add results files, folders of them, or another store (a .sqlite file or a URL) to the history; a run
    already there is kept once."""
    from ..store import import_results, import_store, normalise_url, results_files

    added = kept = 0
    with _opened(store_url, create=True) as st:
        for src in sources:
            is_store = "://" in src or _is_sqlite_file(Path(src))
            if is_store:  # read, never changed: a file at an earlier schema is read through a migrated copy
                a, k = import_store(st, normalise_url(src), tags=tags)
                added, kept = added + a, kept + k
                continue
            for f in results_files([src]):
                _, new = import_results(st, f, tags=tags)
                added, kept = added + new, kept + (not new)
        echo_err(f"{_runs(added)} added, {kept} already in {st.display_url}")
    return 0


@command.command("delete")
@click.argument("runs", nargs=-1, required=True)
@_STORE_OPT
def delete_cmd(runs: tuple[str, ...], store_url: str | None) -> int:
    """Delete RUNS (their rows and tags, and texts nothing else uses)."""
    from ..store import compact_if_worth_it

    with _opened(store_url) as st:
        ids = [_get(st, r).id for r in runs]
        n = st.delete_runs(ids)
        compacted = compact_if_worth_it(st)
        echo_err(f"{_runs(n)} deleted from {st.display_url}" + (" (file compacted)" if compacted else ""))
    return 0


@command.command("prune")
@_STORE_OPT
@click.option("--keep", type=click.IntRange(0), default=None,
              help="Keep the N newest complete runs of each suite and configuration (and any run newer than "
                   "them).")
@click.option("--older-than", default=None, metavar="AGE", help="Only runs started more than AGE ago (30d, 12h, 2w).")
@click.option("--dry-run", is_flag=True, help="List what would be deleted; delete nothing.")
@_JSON_OPT
def prune_cmd(store_url: str | None, keep: int | None, older_than: str | None, dry_run: bool, as_json: bool) -> int:
    """Delete old runs: beyond --keep N of each suite, and/or older than --older-than (both: a run must match both)."""
    from ..store import StoreError, compact_if_worth_it, current, normalise_url, prune_plan, require_history

    if keep is None and older_than is None:
        raise UserError("prune needs --keep N and/or --older-than AGE")
    try:  # a CI job's first run has no history yet: nothing to prune is not an error
        require_history(normalise_url(store_url) if store_url else current().resolved_url())
    except StoreError as exc:
        if as_json:
            _dump({"dry_run": dry_run, "runs": []})
        echo_err(f"{exc}; nothing to prune")
        return 0
    with _opened(store_url) as st:
        doomed = prune_plan(st, keep=keep, older_than=older_than)
        if as_json:
            _dump({"dry_run": dry_run, "runs": [run_json(r) for r in doomed]})
        else:
            for r in doomed[:50]:
                echo_err(f"{'would delete' if dry_run else 'delete'} {r.id[:12]} {_cell(r.suite, 20)} "
                         f"{_when(r.started_at)}")
        if dry_run:
            echo_err(f"{_runs(len(doomed))} would be deleted (dry run)")
            return 0
        n = st.delete_runs([r.id for r in doomed])
        compacted = compact_if_worth_it(st)
        echo_err(f"{_runs(n)} deleted" + (" (file compacted)" if compacted else ""))
    return 0
