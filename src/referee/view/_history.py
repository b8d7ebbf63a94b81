"""The viewer over the run history (``referee view`` with no results file): the runs with filters, a trend chart per
metric across commits, and any stored run opened as a run of the viewer (its cases, review, compare).

Figures come from each run's stored summary (written by the one aggregator when the run ended), never re-aggregated
here; a run opened is exported from the store as the results file it wrote, so every page of the viewer and
``referee calibrate`` read it unchanged.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import threading
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..errors import RefereeError, UserError
from ..store import StoreError, display_url, open_store

MAX_RUNS = 1000
"""The most runs one history page lists (``limit``)."""
MAX_POINTS = 500
MAX_DIFF_CHARS = 20_000
METRICS = ("pass_rate", "mean")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$")


class HistoryError(RefereeError):
    """A history request the viewer refuses: answered with ``status`` and the message."""

    def __init__(self, status: int, msg: str) -> None:
        super().__init__(msg)
        self.status = status
        self.msg = msg


def _finite(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and math.isfinite(v) else None


def run_dict(r: Any) -> dict[str, Any]:
    """One stored run as the history lists it (every text is data: the page shows it as text)."""
    return {"id": r.id, "suite": r.suite, "kind": r.kind, "branch": r.git_branch, "commit": r.git_commit or r.ci_commit,
            "dirty": r.git_dirty, "tags": list(r.tags), "status": "incomplete" if r.status == "running" else r.status,
            "started_at": r.started_at, "finished_at": r.finished_at, "rows": r.n_rows, "scored": r.n_scored,
            "unscored": r.n_unscored, "errors": r.n_error, "cost_usd": _finite(r.cost_usd),
            "pass_rate": [_finite(r.pass_rate), _finite(r.pass_rate_lo), _finite(r.pass_rate_hi)],
            "mean": [_finite(r.mean), _finite(r.mean_lo), _finite(r.mean_hi)], "judge": r.judge}


class History:
    """The store the viewer reads (one connection pool for the server's life) and where opened runs go."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.display = display_url(url)
        # A viewer only reads: a local file that is not there (nothing recorded yet, or a mistyped --store) is an
        # error, never an empty database made where the viewer was started.
        self.store = open_store(url, create=False)
        self._lock = threading.Lock()
        self.opened: dict[str, str] = {}
        """Stored run id -> the viewer's run key."""

    def close(self) -> None:
        self.store.close()

    def export_dir(self) -> Path:
        """Where opened runs are written: beside a SQLite store's file, else in referee's folder."""
        from .._util._home import ensure_dir, referee_dir

        if self.store.dialect == "sqlite":
            db = self.store.engine.url.database
            if db and db != ":memory:":
                return ensure_dir(Path(db).resolve().parent / "view-runs")
        return ensure_dir(referee_dir(create=True) / "view-runs")

    # -- endpoints -----------------------------------------------------------------------------------------

    def api_runs(self, params: dict[str, str]) -> dict[str, Any]:
        filters: dict[str, Any] = {}
        for name in ("suite", "branch", "tag"):
            v = params.get(name)
            if v:
                filters[name] = v
        status = params.get("status") or None
        if status is not None:
            if status not in ("complete", "incomplete", "running", "failed", "interrupted"):
                raise HistoryError(400, "status must be complete, incomplete, failed or interrupted")
            filters["status"] = "running" if status == "incomplete" else status
        for name in ("since", "until"):
            v = (params.get(name) or "").strip()
            if v:
                if not _DATE.match(v):
                    raise HistoryError(400, f"{name} must be a date (YYYY-MM-DD) or an ISO time")
                filters[name] = v  # a day given as `until` includes that whole day (the store's rule)
        limit = _int(params, "limit", 100, 1, MAX_RUNS)
        try:
            recs = self.store.list_runs(**filters, limit=limit + 1)
            facets = self.store.facets()
            total = self.store.count_runs()
        except StoreError as exc:
            raise HistoryError(503, str(exc)) from None
        except UserError as exc:  # a date the pattern let through that is none (month 13)
            raise HistoryError(400, str(exc)) from None
        return {"store": self.display, "runs": [run_dict(r) for r in recs[:limit]], "more": len(recs) > limit,
                "total": total, "facets": facets | {"statuses": ["complete", "incomplete", "failed", "interrupted"]}}

    def api_alignments(self, params: dict[str, str]) -> dict[str, Any]:
        """The aligned judges ``referee align`` recorded, newest first: each with its method, the judge it was
        fitted for, its labels and its held-out gains (on the metric it was decided on) over the raw judge and
        over the no-judge baseline."""
        from ..store import alignments

        limit = _int(params, "limit", 100, 1, MAX_RUNS)
        try:
            found = alignments(self.store)
        except StoreError as exc:
            raise HistoryError(503, str(exc)) from None
        out = []
        for a in found[:limit]:
            met = a.get("metrics") or {}
            cfg = a.get("config") or {}
            held = met.get("heldout") or {}
            metric = held.get("metric")
            gains = held.get("gains") or {}
            judge: dict[str, Any] = cfg["judge"] if isinstance(cfg.get("judge"), dict) else {}
            out.append({
                "id": a["id"], "created_at": a["created_at"], "method": met.get("method") or [],
                "judge": "/".join(str(judge[k]) for k in ("provider", "model") if judge.get(k)) or None,
                "n_labels": met.get("n_labels"), "heldout": held.get("n"), "labels": a["labels"], "metric": metric,
                "gain_raw": (gains.get("raw") or {}).get(metric), "gain_baseline": (gains.get("baseline") or {}).get(metric),
                # The prompt methods' change (examples shown, the winning rewrite as a unified diff), as text.
                "prompt_diff": str((met.get("prompt") or {}).get("diff") or "")[:MAX_DIFF_CHARS],
                "examples": [str(x) for x in ((met.get("prompt") or {}).get("examples") or [])][:50],
            })
        return {"alignments": out, "total": len(found), "more": len(found) > limit}

    def api_trend(self, params: dict[str, str]) -> dict[str, Any]:
        """One chart per metric, one point per commit (its newest complete run; a run with no commit stands
        alone), oldest first, for one suite judged one way (the configuration of its newest run)."""
        from ..reports._charts import TrendPoint, trend

        suite = params.get("suite") or None
        branch = params.get("branch") or None
        limit = _int(params, "limit", 50, 2, MAX_POINTS)
        by = params.get("by") or "commit"
        if by not in ("commit", "run"):
            raise HistoryError(400, "by must be commit or run")
        try:
            runs = self.store.list_runs(suite=suite, branch=branch, tag=params.get("tag") or None,
                                        status="complete", limit=limit * 5)
        except StoreError as exc:
            raise HistoryError(503, str(exc)) from None
        if not runs:
            return {"suite": suite, "points": [], "charts": [], "note": "no complete run to draw"}
        newest = runs[0]
        runs = [r for r in runs if r.identity == newest.identity]
        left_out = len({r.identity for r in runs}) > 1
        if by == "commit":
            seen: set[str] = set()
            kept = []
            for r in runs:
                key = r.git_commit or r.ci_commit or r.id
                if key not in seen:
                    seen.add(key)
                    kept.append(r)
            runs = kept
        runs = list(reversed(runs[:limit]))
        gate = self._gate(newest.id)
        points: list[dict[str, Any]] = []
        charts = []
        for metric in METRICS:
            tps = []
            prev_lo: float | None = None
            for r in runs:
                v, lo, hi = (_finite(getattr(r, metric)), _finite(getattr(r, f"{metric}_lo")),
                             _finite(getattr(r, f"{metric}_hi")))
                # A regression: the value fell below the previous point's interval, or under the gate.
                reg = v is not None and ((prev_lo is not None and v < prev_lo)
                                         or (metric == "pass_rate" and gate is not None and v < gate))
                if v is not None:
                    prev_lo = lo
                when = (r.started_at or "")[:16].replace("T", " ")
                tps.append(TrendPoint(label=f"{(r.git_commit or r.ci_commit or r.id)[:10]} {when}", value=v, lo=lo,
                                      hi=hi, href="#/history/open/" + quote(r.id, safe=""), regression=reg))
                if metric == "pass_rate":
                    points.append(run_dict(r) | {"regression": {}})
                points[len(tps) - 1]["regression"][metric] = reg
            title = "pass rate" if metric == "pass_rate" else "mean score"
            charts.append({"id": f"trend-{metric}", "metric": metric, "title": f"{title} across "
                           f"{'commits' if by == 'commit' else 'runs'}",
                           "svg": trend(tps, title=title, gate=gate if metric == "pass_rate" else None,
                                        percent=metric == "pass_rate", chart_id=f"trend-{metric}").svg})
        note = (f"runs judged another way than the newest ({newest.id[:12]}) are left out" if left_out else None)
        return {"suite": newest.suite, "by": by, "gate": gate, "points": points, "charts": charts, "note": note}

    def _gate(self, run_id: str) -> float | None:
        """The pass-rate gate (``gates: fail_under``) of the suite as its newest run recorded it."""
        try:
            m = self.store.manifest(run_id)
        except (StoreError, ValueError):
            return None
        suite = m.extra.get("suite") if m is not None else None
        gates = suite.get("gates") if isinstance(suite, dict) else None
        v = gates.get("fail_under") if isinstance(gates, dict) else None
        return _finite(v)

    def export(self, run_id: str) -> tuple[Any, Path]:
        """The stored run ``run_id`` written as its results file (and manifest) for the viewer. A complete run's
        file is written once and reused (its labels sit beside it); an unfinished one is written afresh."""
        from ..store import load_run

        try:
            rec = self.store.get_run(run_id)
        except KeyError as exc:
            raise HistoryError(404, str(exc.args[0])) from None
        except StoreError as exc:
            raise HistoryError(503, str(exc)) from None
        safe = re.sub(r"[^A-Za-z0-9_-]", "_", rec.id)[:40]
        digest = hashlib.sha256(rec.id.encode("utf-8")).hexdigest()[:8]
        out = self.export_dir() / f"run-{safe}-{digest}.jsonl"
        if out.is_file() and rec.status == "complete":
            return rec, out
        run = load_run(self.store, rec.id)
        tmp = out.with_name(f".{out.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        from ..results._files import manifest_path
        from ..results._writer import ResultWriter

        try:
            with ResultWriter(tmp, append=False) as w:
                w.write_all(run.rows)
            if run.manifest is not None:
                run.manifest.write(tmp)
                os.replace(manifest_path(tmp), manifest_path(out))
            os.replace(tmp, out)
        except OSError as exc:
            raise HistoryError(500, f"could not write the run to {out}: {exc.strerror or exc}") from None
        finally:
            for p in (tmp, manifest_path(tmp)):
                p.unlink(missing_ok=True)
        return rec, out

    @property
    def lock(self) -> threading.Lock:
        return self._lock


def _int(params: dict[str, str], name: str, default: int, lo: int, hi: int) -> int:
    v = params.get(name)
    if v in (None, ""):
        return default
    try:
        n = int(v)
    except ValueError:
        raise HistoryError(400, f"{name} must be a whole number") from None
    if not lo <= n <= hi:
        raise HistoryError(400, f"{name} must be between {lo} and {hi}")
    return n


def open_history(url: str | None) -> History:
    """The history at ``url`` (default: the store in force), refusing a store that is turned off."""
    from ..store import current, normalise_url, require_history

    if url is None and not current().enabled:
        raise UserError("the run history is off (REFEREE_STORE=off): give --store URL to view one")
    resolved = normalise_url(url) if url else current().resolved_url()
    try:
        require_history(resolved)
    except StoreError as exc:
        raise StoreError(f"{exc}; `referee run SUITE` records runs there, or give results files to view "
                         "them") from None
    return History(resolved)


__all__ = ["History", "HistoryError", "open_history", "run_dict"]
