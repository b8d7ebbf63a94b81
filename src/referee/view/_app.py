"""The viewer's JSON API, independent of the HTTP server: each endpoint is a method returning plain data.

Statistics are never recomputed here: the summary is ``referee score``'s (``aggregate.summarize`` rendered by
``reports.json_summary.summary_dict``), a comparison is ``summarize(candidate, baseline=...)``, and the
judge-human agreement is ``referee calibrate``'s (``calibrate.calibrate`` over ``read_labels``).
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from ..aggregate import ScoreOptions, summarize
from ..aggregate._load import PASS_RULES
from ..aggregate._units import build_units
from ..cases._case import Case
from ..errors import RefereeError, UserError
from ..stats._bootstrap import DEFAULT_N_BOOT
from ._labels import DEFAULT_REVIEWER, LabelError, LabelStore, build_label, default_labels_path
from ._store import (
    FLAG_NAMES,
    MAX_LIMIT,
    RANGE_KEYS,
    SORT_KEYS,
    STATUS_NAMES,
    Query,
    Run,
    clean,
    passes,
    review_queue,
    row_flags,
    select,
)

API_VERSION = 1
_EXCERPT = 300
MARKDOWN_LIMIT = 200_000
"""Outputs longer than this (characters) are shown as text, not rendered."""

log = logging.getLogger("referee.view")
LABEL_SYNC_S = 2.0
"""How often a stored run's labels are read again from the run history (other reviewers' labels)."""


class ApiError(RefereeError):
    """An API request ``referee view`` refuses: answered with ``status`` and the message as JSON."""

    def __init__(self, status: int, msg: str) -> None:
        super().__init__(msg)
        self.status = status
        self.msg = msg


@dataclass
class ViewOptions:
    """How the viewer scores rows: threshold, pass rule and bootstrap resamples (``referee score``'s own)."""

    threshold: float = 0.7
    pass_rule: str = "threshold"
    n_boot: int = DEFAULT_N_BOOT
    """Resamples for the summary's intervals (the default of ``referee score``, so the figures are its own)."""


def _markdown() -> Any:
    from markdown_it import MarkdownIt

    # Raw HTML in case text is escaped, never passed through; markdown-it's own link check refuses
    # javascript:, vbscript:, file: and data: (except images) URLs.
    return MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
        ["table", "strikethrough"])


class ViewApp:
    """The viewer's API over loaded runs and their label stores (what the HTTP handler calls)."""

    def __init__(self, runs: list[Run], labels: list[LabelStore], opts: ViewOptions) -> None:
        self.runs = {r.key: r for r in runs}
        self.order = [r.key for r in runs]
        self.labels = {r.key: lab for r, lab in zip(runs, labels, strict=True)}
        self.opts = opts
        self._md = _markdown()
        self._compare_lock = threading.Lock()  # one computation per comparison: a request waits for the warm-up
        self.warnings: list[str] = []
        """What the user should know about the inputs (id collisions between cases files, skipped files)."""
        self.history: Any = None
        """The run history this viewer reads (``referee view`` with no results file, or ``--store``), or None."""
        self._label_sync: dict[str, float] = {}
        self.reviewer: str | None = None
        """The reviewer's name (``--reviewer``): the page's default, and the name of a label posted without one."""
        self.reviewers_per_case = 1
        """How many reviewers each case asks for (``--reviewers K``): a queue offers a reviewer the cases they have
        not labelled that fewer than K reviewers have; with K > 1 the page shows each reviewer only their own
        labels (a convention of the page: the API still returns every label)."""

    # -- helpers -----------------------------------------------------------------------------------------

    def run(self, key: str) -> Run:
        r = self.runs.get(key)
        if r is None:
            raise ApiError(404, f"no run {key!r} (runs: {', '.join(self.order)})")
        r.refresh()
        return r

    def _query(self, params: dict[str, str]) -> Query:
        def _bool(name: str) -> bool | None:
            v = params.get(name)
            if v in (None, ""):
                return None
            if v in ("true", "1", "yes"):
                return True
            if v in ("false", "0", "no"):
                return False
            raise ApiError(400, f"{name} must be true or false")

        def _int(name: str, default: int, lo: int, hi: int) -> int:
            v = params.get(name)
            if v in (None, ""):
                return default
            try:
                n = int(v)
            except ValueError:
                raise ApiError(400, f"{name} must be a whole number") from None
            if not lo <= n <= hi:
                raise ApiError(400, f"{name} must be between {lo} and {hi}")
            return n

        sort = params.get("sort") or "row"
        if sort not in SORT_KEYS:
            raise ApiError(400, f"sort must be one of {', '.join(SORT_KEYS)}")
        status = params.get("status") or None
        if status is not None and status not in STATUS_NAMES.values():
            raise ApiError(400, f"status must be one of {', '.join(STATUS_NAMES.values())}")
        ranges: dict[str, tuple[float | None, float | None]] = {}
        for name in RANGE_KEYS:
            bounds = (_num(params, f"min_{name}"), _num(params, f"max_{name}"))
            if bounds != (None, None):
                ranges[name] = bounds
        return Query(
            ranges=ranges, status=status, passed=_bool("passed"), category=params.get("category") or None,
            evaluator=params.get("evaluator") or None, flag=params.get("flag") or None,
            q=(params.get("q") or "").strip() or None, labelled=_bool("labelled"), sort=sort,
            desc=params.get("order") == "desc", offset=_int("offset", 0, 0, 10**9),
            limit=_int("limit", 50, 1, MAX_LIMIT), threshold=self._threshold(params),
            pass_rule=self._pass_rule(params),
        )

    def _threshold(self, params: dict[str, str]) -> float:
        v = params.get("threshold")
        if v in (None, ""):
            return self.opts.threshold
        try:
            t = float(v)
        except ValueError:
            raise ApiError(400, "threshold must be a number from 0 to 1") from None
        if not 0.0 <= t <= 1.0:
            raise ApiError(400, "threshold must be a number from 0 to 1")
        return t

    def _pass_rule(self, params: dict[str, str]) -> str:
        v = params.get("pass_rule") or self.opts.pass_rule
        if v not in PASS_RULES:
            raise ApiError(400, f"pass_rule must be one of {', '.join(PASS_RULES)}")
        return v

    def _score_opts(self, params: dict[str, str], **kw: Any) -> ScoreOptions:
        return ScoreOptions(threshold=self._threshold(params), pass_rule=self._pass_rule(params),
                            n_boot=self.opts.n_boot, **kw)

    # -- endpoints ---------------------------------------------------------------------------------------

    def api_index(self) -> dict[str, Any]:
        from ..rubrics._model import SCALES

        return {"api_version": API_VERSION, "threshold": self.opts.threshold, "pass_rule": self.opts.pass_rule,
                "warnings": self.warnings, "reviewer": self.reviewer,
                "reviewers_per_case": self.reviewers_per_case,
                "history": None if self.history is None else {"store": self.history.display},
                "runs": [self.run(k).info() | {"labels": str(self.labels[k].path)} | self._stored(k)
                         for k in list(self.order)],
                "flags": list(FLAG_NAMES), "sort_keys": list(SORT_KEYS), "scales": list(SCALES)}

    def _stored(self, key: str) -> dict[str, Any]:
        h = self.history
        if h is None:
            return {}
        rid = next((r for r, k in h.opened.items() if k == key), None)
        return {} if rid is None else {"stored_run": rid}

    # -- the run history ---------------------------------------------------------------------------------

    def _history(self) -> Any:
        if self.history is None:
            raise ApiError(404, "this viewer reads no run history (start it with no results file, or with --store)")
        return self.history

    def api_history(self, params: dict[str, str]) -> dict[str, Any]:
        from ._history import HistoryError

        try:
            return cast(dict[str, Any], self._history().api_runs(params))
        except HistoryError as exc:
            raise ApiError(exc.status, exc.msg) from None

    def api_trend(self, params: dict[str, str]) -> dict[str, Any]:
        from ._history import HistoryError

        try:
            return cast(dict[str, Any], self._history().api_trend(params))
        except HistoryError as exc:
            raise ApiError(exc.status, exc.msg) from None

    def api_alignments(self, params: dict[str, str]) -> dict[str, Any]:
        from ._history import HistoryError

        try:
            return cast(dict[str, Any], self._history().api_alignments(params))
        except HistoryError as exc:
            raise ApiError(exc.status, exc.msg) from None

    def sync_labels(self, key: str, *, force: bool = False) -> None:
        """A run opened from the run history: bring the labels other reviewers saved in the store (a shared one)
        into this viewer's labels file, at most every ``LABEL_SYNC_S`` seconds. This viewer's own reviewer's labels
        are taken only for cases it has not labelled here (its own newer ones are never written over)."""
        h = self.history
        if h is None or key not in self.labels:
            return
        run_id = self._stored_run_id(key)
        if run_id is None:
            return
        now = time.monotonic()
        if not force and now - self._label_sync.get(key, -LABEL_SYNC_S) < LABEL_SYNC_S:
            return
        self._label_sync[key] = now
        from ..store import StoreError, view_labels

        try:
            stored = view_labels(h.store, run_id)
        except StoreError as exc:
            log.warning("warning: labels in %s not read: %s", h.display, exc)
            return
        local = self.labels[key]
        me = self.reviewer or DEFAULT_REVIEWER
        for lab in stored:
            who = str(lab.get("reviewer") or DEFAULT_REVIEWER)
            mine = [o for o in local.for_id(str(lab["id"])) if str(o.get("reviewer") or DEFAULT_REVIEWER) == who]
            if (mine and who == me) or (mine and mine[-1] == lab):
                continue
            try:
                local.put(lab)
            except OSError as exc:
                log.warning("warning: a stored label not copied to %s: %s", local.path, exc)
                return

    def api_open(self, body: Any) -> dict[str, Any]:
        """Open stored runs as runs of this viewer (``{"runs": [id, ...]}``); returns their keys, in order."""
        from ._history import HistoryError

        h = self._history()
        ids = body.get("runs") if isinstance(body, dict) else None
        if (not isinstance(ids, list) or not 1 <= len(ids) <= 2
                or not all(isinstance(i, str) and 0 < len(i) <= 200 for i in ids)):
            raise ApiError(400, "expected {\"runs\": [one or two run ids]}")
        keys = []
        with h.lock:
            for rid in ids:
                try:
                    rec, path = h.export(rid)
                except HistoryError as exc:
                    raise ApiError(exc.status, exc.msg) from None
                key = h.opened.get(rec.id)
                if key is None:
                    key = f"h{len(self.order)}"
                    run = Run(key, path, [])
                    inputs = [path, *(self.runs[k].path for k in self.order)]
                    store = LabelStore(default_labels_path(path), inputs)
                    try:
                        store.acquire()
                    except UserError as exc:  # another viewer has this run open for labelling
                        raise ApiError(409, str(exc)) from None
                    run.start_indexing()
                    self.runs[key] = run
                    self.labels[key] = store
                    self.order.append(key)
                    h.opened[rec.id] = key
                keys.append(key)
        for key in keys:  # the labels other reviewers saved in the store, before the page reads any
            self.sync_labels(key, force=True)
        return {"runs": keys, "ids": ids}

    def api_summary(self, key: str, params: dict[str, str]) -> dict[str, Any]:
        from ..reports._json_summary import summary_dict

        run = self.run(key)
        opts = self._score_opts(params)
        ck = ("summary", opts.threshold, opts.pass_rule, run.generation)
        hit = run.cached_summary(ck)
        if hit is not None:
            return hit
        s = summarize(run.table, opts)
        data = summary_dict(s, [], 0)
        out = {"run": key, "n_boot": opts.n_boot, "summary": data}
        run.store_summary(ck, out)
        return out

    def api_grid(self, params: dict[str, str]) -> dict[str, Any]:
        """Cases x runs with each run's own output and verdict (``runs=0,2`` picks and orders the columns)."""
        from ._grid import grid

        keys = [k for k in (params.get("runs") or "").split(",") if k] or self.order
        runs = [self.run(k) for k in keys]
        qy = self._query({k: v for k, v in params.items() if k in ("offset", "limit", "threshold", "pass_rule")})
        try:
            return grid(runs, threshold=qy.threshold, rule=qy.pass_rule, q=(params.get("q") or "").strip() or None,
                        show=params.get("show") or "all", offset=qy.offset, limit=qy.limit)
        except ValueError as exc:
            raise ApiError(400, str(exc)) from None

    def api_charts(self, key: str, params: dict[str, str]) -> dict[str, Any]:
        """The run's charts as inline SVG (drawn by ``reports._charts``, as in the HTML report)."""
        from ._grid import charts

        run = self.run(key)
        opts = self._score_opts(params)
        s = summarize(run.table, opts)
        return {"run": key, "charts": charts(run, s, self.labels[key].by_id(), threshold=opts.threshold,
                                             rule=opts.pass_rule)}

    def api_cases(self, key: str, params: dict[str, str]) -> dict[str, Any]:
        run = self.run(key)
        qy = self._query(params)
        labels = self.labels[key]
        try:
            rows, total = select(run, qy, labels.ids())
        except ValueError as exc:
            raise ApiError(400, str(exc)) from None
        except UserError as exc:
            raise ApiError(500, str(exc)) from None
        return {"run": key, "total": total, "offset": qy.offset, "limit": qy.limit,
                "rows": self._row_lines(run, rows.tolist(), qy.threshold, qy.pass_rule)}

    def _row_lines(self, run: Run, rows: list[int], threshold: float, rule: str) -> list[dict[str, Any]]:
        t = run.table
        texts = t.read_rows(rows)
        arr = np.asarray(rows, dtype=np.int64)
        ok = passes(t, arr, threshold, rule).tolist() if rows else []
        lab = self.labels[run.key].by_id()
        out = []
        for k, i in enumerate(rows):
            d = texts.get(i, {})
            ev = d.get("evaluator")
            rat = d.get("rationale") or d.get("error") or ""
            out.append(clean({
                "row": i, "id": t.ids[i], "repeat": int(t.repeat[i]) if t.repeat[i] >= 0 else None,
                "turn": int(t.turn[i]) if t.turn[i] >= 0 else None,
                "status": STATUS_NAMES[int(t.status[i])], "score": float(t.score[i]),
                "passed": None if ok[k] < 0 else bool(ok[k]),
                "category": t.category_names[int(t.category[i])],
                "evaluator": ev if isinstance(ev, str) else "judge" if "schema_version" in d else "seed",
                "flags": row_flags(d) if isinstance(d, dict) else [],
                "cost_usd": float(t.cost[i]), "latency_ms": float(t.latency[i]),
                "rationale": str(rat)[:_EXCERPT],
                "labels": [_label_short(x) for x in lab.get(t.ids[i], [])],
            }))
        return out

    def api_case(self, key: str, row: int, params: dict[str, str]) -> dict[str, Any]:
        run = self.run(key)
        t = run.table
        if not 0 <= row < len(t):
            raise ApiError(404, f"no row {row} in run {key} ({len(t)} rows)")
        # Imported here: jinja2, rapidfuzz and the rubric models are not needed to start the viewer.
        from ..evaluators._evidence import Locator
        from ..reports._claims import claims_table
        from ..reports._html import highlight_segments

        d = run.read_row(row)
        try:
            case = run.index().cases.get(t.ids[row])
        except UserError:
            case = None
        thr = self._threshold(params)
        ok = passes(t, np.asarray([row]), thr, self._pass_rule(params))[0]
        crits = [c for c in d.get("criteria") or [] if isinstance(c, dict)]
        raw_details = d.get("details")
        details: dict[str, Any] = raw_details if isinstance(raw_details, dict) else {}
        judged = self._judged_text(case, details)
        quotes: list[tuple[str, str]] = []
        crit_out = []
        located: Locator | None = None
        claims = claims_table(details, case)  # a claim's quotes come from its chunks: checked and marked there
        in_chunk = {(r["id"], q["quote"]): q["found"] for r in (claims or {}).get("rows", []) for q in r["supports"]}
        for c in crits:
            ev = [str(e) for e in c.get("evidence") or [] if e is not None] if isinstance(
                c.get("evidence"), list) else []
            if judged and ev and claims is None and located is None:
                located = Locator(judged)  # the judged text normalised once for every quote of every criterion
            found = ([bool(located and located.spans(q)) for q in ev] if claims is None
                     else [in_chunk.get((str(c.get("id")), q), c.get("grounded") is True) for q in ev])
            quotes += [(str(c.get("id")), q) for q in ev] if claims is None else []
            crit_out.append({**{k: c.get(k) for k in ("id", "name", "status", "score", "raw_score", "scale",
                                                     "passed", "weight", "critical", "rationale", "grounded",
                                                     "error")},
                             "evidence": [{"quote": q, "found": f} for q, f in zip(ev, found, strict=True)]})
        ungrounded_crit = {str(c.get("id")) for c in crits if c.get("grounded") is False}
        segments = []
        if judged:
            for s in highlight_segments(judged, quotes, located):
                segments.append({"text": s.text, "labels": s.labels,
                                 "ungrounded": bool(set(s.labels) & ungrounded_crit)})
        out = {
            "run": key, "row": row, "id": t.ids[row], "status": STATUS_NAMES[int(t.status[row])],
            "score": float(t.score[row]), "passed": None if ok < 0 else bool(ok),
            "threshold": thr, "category": t.category_names[int(t.category[row])],
            "evaluator": d.get("evaluator") or ("judge" if "schema_version" in d else "seed"),
            "flags": row_flags(d), "line": int(t.line[row]),
            "repeat": d.get("repeat"), "turn": d.get("turn"),
            **{k: d.get(k) for k in ("rationale", "error", "raw_reply", "judge", "usage", "cost_usd", "latency_ms",
                                     "winner", "position_bias_detected", "metadata")},
            "criteria": crit_out, "details": details, "judged_text": segments,
            "check_criteria": _check_criteria(details),
            "case": self._case(case, d.get("turn") if isinstance(d.get("turn"), int) else None), "labels": self.labels[key].for_id(t.ids[row]),
            "label_scale": _label_scale(crits, details), "pairwise": _is_pairwise(d),
            "row_json": d, "claims": claims,
        }
        return cast(dict[str, Any], clean(out))

    @staticmethod
    def _judged_text(case: Case | None, details: dict[str, Any]) -> str:
        for v in (details.get("text"), None if case is None else case.output):
            if isinstance(v, str) and v:
                return v
        return ""

    def _case(self, case: Case | None, turn: int | None = None) -> dict[str, Any] | None:
        if case is None:
            return None
        out: dict[str, Any] = {"source": case.where}
        for k in ("input", "reference", "context", "contexts", "output_a", "output_b", "system_a", "system_b"):
            if case.get(k) is not None:
                out[k] = case.get(k)
        if case.output is not None:
            out["output"] = case.output
            if isinstance(case.output, str) and len(case.output) <= MARKDOWN_LIMIT:
                out["output_html"] = self._md.render(case.output)  # a huge output is shown as plain text
        if case.turns:
            from ..evaluators._conversation import ConversationError, conversation_of

            try:  # the conversation as the judge saw it: turns, then input and output as the last turns
                conv = conversation_of(case)
            except ConversationError:
                conv = [{"role": str(t.get("role", "?")), "content": t.get("content")}
                        if isinstance(t, dict) else {"role": "?", "content": t} for t in case.turns]
            # Per-turn rows carry ``turn``: the 1-based position of the judged reply in this list.
            out["turns"] = [{**t, "judged": turn == i + 1} for i, t in enumerate(conv)]
        if any(case.get(k) is not None for k in ("trajectory", "messages", "spans", "resourceSpans")):
            from ..trajectories._importers import trajectory_of
            from ..trajectories._model import TrajectoryError

            try:
                traj = trajectory_of(case)
                out["trajectory"] = [{"index": s.index, "tool": s.tool, "args": s.args, "result": s.result,
                                      "error": s.error} for s in traj.steps]
            except TrajectoryError as exc:
                out["trajectory_error"] = str(exc)
        return out

    def api_queue(self, key: str, params: dict[str, str]) -> dict[str, Any]:
        run = self.run(key)
        kind = params.get("kind") or "uncertain"
        try:
            n = int(params.get("n") or 20)
            seed = int(params["seed"]) if params.get("seed") else random.randrange(1 << 30)
        except ValueError:
            raise ApiError(400, "n and seed must be whole numbers") from None
        if not 1 <= n <= MAX_LIMIT:
            raise ApiError(400, f"n must be between 1 and {MAX_LIMIT}")
        from ._labels import MAX_REVIEWER
        from ._review import open_ids

        who = (params.get("reviewer") or self.reviewer or DEFAULT_REVIEWER).strip()
        if not who or len(who) > MAX_REVIEWER:
            raise ApiError(400, f"reviewer must be a name of at most {MAX_REVIEWER} characters")
        try:
            done = open_ids(self.labels[key], who, self.reviewers_per_case)
            rows = review_queue(run, kind, n, self._threshold(params), done, seed)
        except ValueError as exc:
            raise ApiError(400, str(exc)) from None
        return {"run": key, "kind": kind, "seed": seed if kind == "random" else None, "rows": rows,
                "reviewer": who, "reviewers_per_case": self.reviewers_per_case,
                "cases": self._row_lines(run, rows, self._threshold(params), self._pass_rule(params))}

    def api_review(self, key: str, row: int) -> dict[str, Any]:
        """A pairwise case for blind review: the two outputs in a random order, without the judge's verdict."""
        run = self.run(key)
        t = run.table
        if not 0 <= row < len(t):
            raise ApiError(404, f"no row {row} in run {key}")
        try:
            case = run.index().cases.get(t.ids[row])
        except UserError:
            case = None
        if case is None or case.get("output_a") is None or case.get("output_b") is None:
            raise ApiError(404, f"case {t.ids[row]!r} has no output_a/output_b to compare (pass --cases)")
        order = ["a", "b"]
        random.SystemRandom().shuffle(order)
        return cast(dict[str, Any], clean({"run": key, "row": row, "id": t.ids[row], "input": case.input,
                                           "sides": [{"side": s, "text": case.get(f"output_{s}")} for s in order]}))

    def api_labels(self, key: str) -> dict[str, Any]:
        store = self.labels[key]
        return {"run": key, "path": str(store.path), "labels": store.lines}

    def api_post_label(self, body: Any) -> tuple[int, dict[str, Any]]:
        if not isinstance(body, dict):
            raise ApiError(400, "expected a JSON object")
        key = body.get("run", self.order[0] if len(self.order) == 1 else None)
        if not isinstance(key, str) or key not in self.runs:
            raise ApiError(400 if key is None else 404, "'run' must name one of the runs: " + ", ".join(self.order))
        run = self.run(key)
        cid = body.get("id")
        known = isinstance(cid, str) and cid in set(run.table.ids)
        pairwise = False
        if known:
            i = run.table.ids.index(str(cid))
            d = run.read_row(i)
            pairwise = _is_pairwise(d)
            scale = body.get("scale", "0-1")
            if body.get("score") is not None and scale not in ("0-1", "binary"):
                crits = [c for c in d.get("criteria") or [] if isinstance(c, dict)]
                det = d.get("details") if isinstance(d.get("details"), dict) else {}
                own = _label_scale(crits, det or {})
                if scale != own:
                    raise ApiError(400, f"case {cid!r} is not scored on the {scale} scale"
                                        + (f" (its rubric's scale is {own})" if own else " (use 0-1, or pass/fail)"))
        if self.reviewer and not body.get("reviewer"):
            body = {**body, "reviewer": self.reviewer}
        try:
            label = build_label(body, known=known, results_name=run.path.name, pairwise=pairwise)
        except LabelError as exc:
            raise ApiError(exc.status, str(exc)) from None
        try:
            replaced = self.labels[key].put(label)
        except OSError as exc:
            raise ApiError(500, f"could not save the label to {self.labels[key].path}: {exc.strerror or exc} "
                                "(labels already saved are kept)") from None
        out = {"run": key, "label": label, "replaced": replaced, "path": str(self.labels[key].path)}
        stored = self._stored_run_id(key)
        if stored is not None:  # a run of the history: the label goes to the store too, for the other reviewers
            from ..store import StoreError, record_view_label

            try:
                record_view_label(self.history.store, stored, label)
                out["store"] = self.history.display
            except (StoreError, ValueError) as exc:
                out["store_warning"] = f"saved in {self.labels[key].path} but not in the run history: {exc}"
        return (200 if replaced else 201), out

    def _stored_run_id(self, key: str) -> str | None:
        h = self.history
        return None if h is None else next((rid for rid, k in h.opened.items() if k == key), None)

    def api_agreement(self, key: str) -> dict[str, Any]:
        from ..calibrate._calibrate import calibrate, judge_labels, read_labels

        run = self.run(key)
        store = self.labels[key]
        if not store.lines:
            return {"run": key, "n": 0, "message": "no labels yet"}
        ck = ("agreement", run.generation, store.version)
        hit = run.cached_summary(ck)
        if hit is not None:
            return hit
        th, rule = self.opts.threshold, self.opts.pass_rule
        # The command printed runs the one computation this page ran: the same verdict rule, flag for flag.
        flags = f" --pass-threshold {th:g}" + (f" --pass-rule {rule}" if rule != "threshold" else "")
        try:
            judged = judge_labels(run.path, threshold=th, pass_rule=rule, table=run.table)
            cal = calibrate(judged, read_labels(store.path), n_boot=self.opts.n_boot)
            out = cast(dict[str, Any], clean({"run": key, **cal.to_dict(),
                                              "command": f"referee calibrate {run.path} {store.path}{flags}"}))
        except UserError as exc:
            out = {"run": key, "n": 0, "message": str(exc)}
        run.store_summary(ck, out)
        return out

    def api_reviewers(self, key: str) -> dict[str, Any]:
        """The reviewers' agreement with each other per criterion, beside the judge's agreement with them."""
        from ._review import reviewers_agreement

        run = self.run(key)
        store = self.labels[key]
        ck = ("reviewers", run.generation, store.version, self.opts.threshold, self.opts.pass_rule)
        hit = run.cached_summary(ck)
        if hit is None:
            try:
                hit = cast(dict[str, Any], clean(reviewers_agreement(
                    run, store, threshold=self.opts.threshold, pass_rule=self.opts.pass_rule,
                    n_boot=self.opts.n_boot)))
            except UserError as exc:
                hit = {"run": key, "criteria": [], "reviewers": [], "message": str(exc)}
            hit["reviewers_per_case"] = self.reviewers_per_case
            run.store_summary(ck, hit)
        return hit

    def api_align(self, key: str) -> dict[str, Any]:
        """``referee align``'s score map on the labels given so far (held-out figures, changed verdicts)."""
        from ._review import AlignPageError, align_page

        run = self.run(key)
        store = self.labels[key]
        ck = ("align", run.generation, store.version, self.opts.threshold)
        hit = run.cached_summary(ck)
        if hit is None:
            try:
                hit = cast(dict[str, Any], clean(align_page(run, store, threshold=self.opts.threshold,
                                                            n_boot=self.opts.n_boot)))
            except AlignPageError as exc:
                raise ApiError(400, str(exc)) from None
            run.store_summary(ck, hit)
        return hit

    def api_compare(self, base: str, cand: str, params: dict[str, str]) -> dict[str, Any]:

        rb, rc = self.run(base), self.run(cand)
        opts = self._score_opts(params, allow_case_set_change=True)
        ck = ("compare", base, rb.generation, opts.threshold, opts.pass_rule)
        hit = rc.cached_summary(ck)
        if hit is None:
            with self._compare_lock:
                hit = self._compare_data(rb, rc, ck, opts)
        return self._compare_page(base, cand, hit, params)

    def warm_compare(self) -> threading.Thread | None:
        """Compute the first two runs' comparison (the compare link's) in the background, so the page shows it
        at once when the user gets there; a request meanwhile waits for this one instead of starting another."""
        if len(self.order) < 2:
            return None

        def warm() -> None:
            try:
                self.api_compare(self.order[0], self.order[1], {})
            except Exception:  # noqa: BLE001 - a warm-up only; the request says what is wrong
                pass

        t = threading.Thread(target=warm, name="referee-view-compare", daemon=True)
        t.start()
        return t

    def _compare_data(self, rb: Run, rc: Run, ck: tuple[Any, ...], opts: ScoreOptions) -> dict[str, Any]:
        from ..reports._json_summary import summary_dict

        hit = rc.cached_summary(ck)
        if hit is None:
            try:
                s = summarize(rc.table, opts, baseline=rb.table)
            except UserError as exc:
                raise ApiError(400, str(exc)) from None
            data = summary_dict(s, [], 0)
            hit = {"summary": data, "cases": self._paired_cases(rb, rc, opts)}
            from ..reports._charts import Pair, flips

            chart = flips([Pair(c["id"], (c["baseline"] or {}).get("score"), (c["candidate"] or {}).get("score"),
                                c["change"]) for c in hit["cases"]],
                          title="Baseline vs candidate per case", threshold=opts.threshold)
            hit["chart"] = {"id": chart.id, "title": chart.title, "svg": chart.svg}  # once, not per page
            rc.store_summary(ck, hit)
        return hit

    def _compare_page(self, base: str, cand: str, hit: dict[str, Any], params: dict[str, str]) -> dict[str, Any]:
        which = params.get("filter") or "changed"
        kinds = {"regressions": {"regression"}, "improvements": {"improvement"},
                 "changed": {"regression", "improvement", "lost", "gained"}, "all": None}
        if which not in kinds:
            raise ApiError(400, f"filter must be one of {', '.join(kinds)}")
        want = kinds[which]
        cases = [c for c in hit["cases"] if want is None or c["change"] in want]
        try:
            offset = max(0, int(params.get("offset") or 0))
            limit = min(MAX_LIMIT, max(1, int(params.get("limit") or 50)))
        except ValueError:
            raise ApiError(400, "offset and limit must be whole numbers") from None
        counts: dict[str, int] = {}
        for c in hit["cases"]:
            counts[c["change"]] = counts.get(c["change"], 0) + 1
        return {"baseline": base, "candidate": cand, "summary": hit["summary"], "counts": counts,
                "chart": hit["chart"],
                "filter": which, "total": len(cases), "offset": offset, "cases": cases[offset:offset + limit]}

    @staticmethod
    def _paired_cases(rb: Run, rc: Run, opts: ScoreOptions) -> list[dict[str, Any]]:
        """Every case of either run side by side (per-case verdicts by ``aggregate.units``, as ``score``)."""
        def units(run: Run) -> Any:
            return build_units(run.table, np.arange(len(run.table), dtype=np.int64), opts.threshold,
                               opts.pass_rule)

        ub, uc = units(rb), units(rc)
        bi = ub.index()
        out = []
        seen = set()

        def sides(u: Any) -> list[dict[str, Any]]:
            # Built from whole columns at once (20,000 cases: 0.1 s, where a clean() per case took 2 s).
            scored = (np.asarray(u.n_scored) > 0).tolist()
            mean = np.asarray(u.mean, dtype=np.float64)
            finite = np.isfinite(mean).tolist()
            means, rows = mean.tolist(), np.asarray(u.first_row).tolist()
            passed = (np.asarray(u.pass_share) >= 0.5).tolist()
            return [{"row": r, "score": m if s and f else None, "passed": p if s else None,
                     "status": "scored" if s else "unscored"}
                    for r, m, s, f, p in zip(rows, means, scored, finite, passed, strict=True)]

        all_b, all_c = sides(ub), sides(uc)

        def side(u: Any, i: int | None) -> dict[str, Any] | None:
            return None if i is None else (all_b if u is ub else all_c)[i]

        for i, k in enumerate(uc.keys):
            j = bi.get(k)
            seen.add(k)
            b, c = side(ub, j), side(uc, i)
            out.append({"id": k, "baseline": b, "candidate": c, "change": _change(b, c)})
        for k, j in bi.items():
            if k not in seen:
                out.append({"id": k, "baseline": side(ub, j), "candidate": None, "change": "missing"})
        rank = {"regression": 0, "lost": 1, "improvement": 2, "gained": 3, "missing": 4, "added": 4,
                "same": 5}
        out.sort(key=lambda c: rank[c["change"]])
        return out


def _check_criteria(details: dict[str, Any]) -> list[dict[str, Any]]:
    """A suite row's judges' own criteria (``details.checks.<id>.criteria``), by the suite's evaluator id."""
    checks = details.get("checks")
    out = []
    for label, d in (checks.items() if isinstance(checks, dict) else []):
        crits = d.get("criteria") if isinstance(d, dict) else None
        if isinstance(crits, list) and crits:
            out.append({"check": str(label), "criteria": [
                {k: c.get(k) for k in ("id", "name", "status", "score", "raw_score", "scale", "passed", "rationale",
                                       "error")} for c in crits if isinstance(c, dict)]})
    return out


def _num(params: dict[str, str], name: str) -> float | None:
    v = params.get(name)
    if v in (None, ""):
        return None
    try:
        x = float(v)
    except ValueError:
        raise ApiError(400, f"{name} must be a number") from None
    if not math.isfinite(x):
        raise ApiError(400, f"{name} must be a finite number")
    return x


def _change(b: dict[str, Any] | None, c: dict[str, Any] | None) -> str:
    if b is None:
        return "added"
    if c is None:
        return "missing"
    if b["passed"] is True and c["passed"] is False:
        return "regression"
    if b["passed"] is False and c["passed"] is True:
        return "improvement"
    if b["passed"] is not None and c["passed"] is None:
        return "lost"
    if b["passed"] is None and c["passed"] is not None:
        return "gained"
    return "same"


def _label_short(x: dict[str, Any]) -> dict[str, Any]:
    return {k: x.get(k) for k in ("score", "passed", "raw_score", "scale", "winner", "reviewer") if k in x}


def _label_scale(crits: list[dict[str, Any]], details: dict[str, Any]) -> str | None:
    """The rubric scale a human may score this row on (the composite's, else the criteria's common one)."""
    from ..rubrics._model import SCALES

    s = details.get("composite_scale")
    if isinstance(s, str) and s in SCALES and s != "binary":
        return s
    scales = {c.get("scale") for c in crits}
    if len(scales) == 1:
        only = scales.pop()
        if isinstance(only, str) and only in SCALES and only not in ("binary", "0-1"):
            return only
    return None


def _is_pairwise(d: dict[str, Any]) -> bool:
    return d.get("evaluator") == "pairwise" or d.get("winner") is not None


def labels_for(paths: list[Path], labels: str | None) -> list[Path]:
    """Where each run's labels go: ``--labels`` for a single run, else ``<results>.labels.jsonl`` beside it."""
    if labels is not None:
        if len(paths) != 1:
            raise UserError("--labels names one file: with several results files each run's labels go beside it "
                            "(<results>.labels.jsonl)")
        return [Path(labels)]
    return [default_labels_path(p) for p in paths]


__all__ = ["API_VERSION", "ApiError", "ViewApp", "ViewOptions", "labels_for"]
