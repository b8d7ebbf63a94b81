"""The runs a viewer serves: columns for paging, sorting and filtering, and each case read back on demand.

Start-up reads each results file with the fast columnar reader of ``referee score``
(:func:`referee.aggregate.load_table`: ids, status, score, category, cost, latency and every row's byte
offset). What only filtering and search need (evaluator, flags, the text to search, the cases file) is indexed
lazily on a background thread, so the first page shows at once even for 100,000 rows; a page reads back only
its own rows by offset. A file that changes on disk (a run still writing) is reloaded on the next request.
"""

from __future__ import annotations

import math
import os
import random
import threading
from collections import ChainMap
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..aggregate import ResultsTable, load_table
from ..aggregate._load import ERROR, SCORED, UNSCORED
from ..cases._case import Case, load_cases
from ..errors import InputError, UserError
from ._cases import LAZY_BYTES, LazyCases

try:
    import orjson

    def _loads(raw: bytes) -> Any:
        return orjson.loads(raw)
except ImportError:  # pragma: no cover - orjson is a dependency; json is the fallback of load.py too
    import json

    def _loads(raw: bytes) -> Any:
        return json.loads(raw)

STATUS_NAMES = {SCORED: "scored", UNSCORED: "unscored", ERROR: "error"}
FLAG_NAMES = ("unscored", "ungrounded", "position_bias", "self_grading", "needs_human", "panel_split")
"""The flags the table filters on (a row's own ``flags`` are shown as they are as well)."""
SORT_KEYS = ("row", "id", "score", "status", "category", "evaluator", "cost", "latency", "passed")
MAX_LIMIT = 500
NEAR_THRESHOLD = 0.1
"""Scores within this of the threshold count as the judge being unsure (review queue)."""
_CACHED = 32
_SEARCH_CHARS = 4000
"""Per field, the text kept for full-text search (a 100 kB output is searched on its start)."""


def own_files(results: Path) -> list[Path]:
    """The files beside a results file that hold its cases: ``x.outputs.jsonl`` (a target's generated outputs)
    and ``x.cases.jsonl`` (the cases a Python run was given in memory)."""
    name = results.name
    stem = name[:-len(".jsonl")] if name.endswith(".jsonl") else name
    return [results.with_name(stem + ".outputs.jsonl"), results.with_name(stem + ".cases.jsonl")]


def _stat_key(p: Path) -> tuple[int, int, int]:
    st = p.stat()
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _text(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    try:
        import json

        return json.dumps(v, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(v)


def row_flags(d: dict[str, Any]) -> list[str]:
    """The markers of one decoded row: its own ``flags`` plus what its fields say (position bias, ungrounded
    criteria, self-grading in details, a status other than scored)."""
    flags = [str(f) for f in d.get("flags") or [] if isinstance(f, str | int | float)]
    if d.get("status") in ("unscored", "error") or ("score" not in d and "status" not in d):
        flags.append("unscored")
    if d.get("position_bias_detected") is True:
        flags.append("position_bias")
    crits = d.get("criteria")
    if isinstance(crits, list) and any(isinstance(c, dict) and c.get("grounded") is False for c in crits):
        flags.append("ungrounded")
    det = d.get("details")
    if isinstance(det, dict):
        if det.get("self_grading"):
            flags.append("self_grading")
        if det.get("ungrounded"):
            flags.append("ungrounded")
    return list(dict.fromkeys(flags))


_SEARCH_FIELDS = ("input", "output", "final_output", "reference", "output_a", "output_b")


def _case_texts(cases: Mapping[str, Case]) -> Any:
    """id -> the searchable text of its case (or None): a file read by offset is scanned once, in order."""
    maps = list(cases.maps) if isinstance(cases, ChainMap) else [cases]
    prepared = [m.search_texts(_SEARCH_FIELDS, _SEARCH_CHARS, _text) if isinstance(m, LazyCases) else m
                for m in maps]

    def text_of(cid: str) -> str | None:
        for m, p in zip(maps, prepared, strict=True):
            if cid in m:
                if p is not m:
                    return p.get(cid)  # type: ignore[return-value]
                c = m[cid]
                return " ".join(_text(c.get(k))[:_SEARCH_CHARS] for k in _SEARCH_FIELDS)
        return None

    return text_of


@dataclass
class RowIndex:
    """What filtering and full-text search need, one entry per table row."""

    evaluator: list[str]
    evaluators: list[str]
    flags: list[list[str]]
    flag_mask: dict[str, NDArray[np.bool_]]
    search: list[str]
    cases: Mapping[str, Case] = field(default_factory=dict)
    case_warnings: list[str] = field(default_factory=list)


class Run:
    """One results file and the cases its rows were judged on."""

    def __init__(self, key: str, path: Path, cases_paths: list[Path], own_cases: list[Path] | None = None) -> None:
        self.key = key
        self.path = path
        self.cases_paths = cases_paths
        self.own_cases = own_cases or []
        """Cases files bound to this run (``--cases RUN=FILE``): read before anything else."""
        self._lock = threading.RLock()
        self._index: RowIndex | None = None
        self._index_error: str | None = None
        self._index_ready = threading.Event()
        self._summaries: dict[tuple[Any, ...], dict[str, Any]] = {}
        self.generation = 0
        self._cases: Mapping[str, Case] | None = None
        self._case_warnings: list[str] = []
        self._cases_generation = -1
        self._cases_lock = threading.Lock()
        self._first_rows: tuple[int, dict[str, int]] | None = None
        self._warming = False
        self._last_check = 0.0
        self.table: ResultsTable
        self._stat: tuple[int, int, int]
        self._load()

    # -- loading and reloading --------------------------------------------------------------------------

    def _load(self) -> None:
        stat = _stat_key(self.path)
        self.table = load_table(self.path)
        self._stat = stat
        self._index = None
        self._index_error = None
        self._index_ready = threading.Event()
        self._summaries = {}
        self.generation += 1

    def refresh(self, min_interval: float = 0.5) -> bool:
        """Reload when the file changed on disk (checked at most every ``min_interval`` s). True if reloaded."""
        import time

        now = time.monotonic()
        if now - self._last_check < min_interval:
            return False
        self._last_check = now
        try:
            stat = _stat_key(self.path)
        except OSError:
            return False  # deleted or moved while viewed: keep showing what was read
        if stat == self._stat:
            return False
        with self._lock:
            try:
                self._load()
            except InputError:
                return False  # e.g. a run that just truncated its file: keep the last good table
        self.start_indexing()
        return True

    def start_indexing(self) -> None:
        self._warming = True
        threading.Thread(target=self._warm, name=f"referee-view-index-{self.key}", daemon=True).start()

    def _warm(self) -> None:
        """In the background, cheapest first: the grid's rows, the cases (outputs), then the row index."""
        self.first_rows()
        try:
            self.cases()
        except Exception as exc:  # noqa: BLE001 - a page must never wait for outputs that will not come
            with self._cases_lock:
                self._cases, self._case_warnings = {}, [f"cases not shown: {type(exc).__name__}: {exc}"]
                self._cases_generation = self.generation
        try:
            self.index()
        except UserError:
            pass  # kept in the index's error, shown when a page asks for it

    def label(self) -> str:
        """What the run is, for a column header: the target id and the model behind it (``v2 (openai:gpt-4o)``)
        when its rows record a target, else the file's name."""
        key = ("label", self.generation)
        hit = self.cached_summary(key)
        if hit is not None:
            return str(hit["label"])
        label = self.path.name
        if len(self.table):
            target = self.read_row(0).get("target")
            if isinstance(target, dict) and isinstance(target.get("id"), str):
                model = ":".join(str(x) for x in (target.get("provider"), target.get("model")) if x)
                said = str(target.get("model") or "") in target["id"]  # a matrix id (prompt@model) names it
                label = target["id"] + (f" ({model})" if model and not said else "")
        self.store_summary(key, {"label": label})
        return label

    def first_rows(self) -> dict[str, int]:
        """Case id -> its first row (cached per load of the file): the grid's rows."""
        got = self._first_rows
        if got is None or got[0] != self.generation:
            rows: dict[str, int] = {}
            for i, cid in enumerate(self.table.ids):
                rows.setdefault(cid, i)
            got = (self.generation, rows)
            self._first_rows = got
        return got[1]

    def index(self) -> RowIndex:
        """The row index, built once per load (callers wait for the background build)."""
        with self._lock:
            if self._index is not None:
                return self._index
            if self._index_error is not None:
                raise UserError(self._index_error)
            try:
                self._index = self._build_index()
            except (InputError, UserError, OSError) as exc:
                self._index_error = f"could not index {self.path}: {exc}"
                raise UserError(self._index_error) from exc
            finally:
                self._index_ready.set()
            return self._index

    def _build_index(self) -> RowIndex:
        t = self.table
        n = len(t)
        evaluator: list[str] = []
        flags: list[list[str]] = []
        texts: list[str] = []
        for raw in self._lines():
            try:
                d = _loads(raw)
            except ValueError:
                d = {}
            if not isinstance(d, dict):
                d = {}
            ev = d.get("evaluator")
            evaluator.append(ev if isinstance(ev, str) else "judge" if "schema_version" in d else "seed")
            flags.append(row_flags(d))
            texts.append(" ".join(_text(d.get(k))[:_SEARCH_CHARS] for k in ("rationale", "error", "raw_reply")))
        for _ in range(n - len(evaluator)):  # the file shrank under us: the reload that follows fixes it
            evaluator.append("?")
            flags.append([])
            texts.append("")
        cases, warns = self.cases(), self._case_warnings
        if cases:
            text_of = _case_texts(cases)
            for i, cid in enumerate(t.ids):
                extra = text_of(cid)
                if extra is not None:
                    texts[i] += " " + extra
        search = [s.casefold() for s in texts]
        masks = {name: np.fromiter((name in fl for fl in flags), dtype=bool, count=n) for name in FLAG_NAMES}
        return RowIndex(evaluator=evaluator, evaluators=sorted(set(evaluator)), flags=flags, flag_mask=masks,
                        search=search, cases=cases, case_warnings=warns)

    def raw_lines(self) -> Any:
        """The raw line of every table row, in table order (see :meth:`_lines`)."""
        return self._lines()

    def _lines(self) -> Any:
        """The raw line of every table row, in table order: one sequential read (rows are in file order)."""
        offsets = self.table.offset.tolist()
        if any(b <= a for a, b in zip(offsets, offsets[1:], strict=False)):  # not ascending: seek each row
            with open(self.path, "rb") as f:
                for off in offsets:
                    f.seek(off)
                    yield f.readline()
            return
        want = iter(offsets)
        nxt = next(want, None)
        pos = nxt or 0
        with open(self.path, "rb") as f:
            f.seek(pos)  # past a byte-order mark and any bad lines before the first row
            for raw in f:
                if nxt is None:
                    return
                if pos == nxt:
                    yield raw
                    nxt = next(want, None)
                pos += len(raw)

    def cases(self) -> Mapping[str, Case]:
        """This run's cases by id (read once per load of the results file; see :meth:`_load_cases`)."""
        with self._cases_lock:
            if self._cases is None or self._cases_generation != self.generation:
                self._cases, self._case_warnings = self._load_cases()
                self._cases_generation = self.generation
            return self._cases

    def cases_now(self) -> Mapping[str, Case] | None:
        """The cases if they are read already, else None while the background reads them (read here when no
        background was started): a page that can show without them (the grid's verdicts) does not wait for a
        large cases file."""
        if self._cases is not None and self._cases_generation == self.generation:
            return self._cases
        if self._warming or not self._cases_lock.acquire(blocking=False):
            return None  # the background index is reading them
        try:
            if self._cases is None or self._cases_generation != self.generation:
                self._cases, self._case_warnings = self._load_cases()
                self._cases_generation = self.generation
            return self._cases
        finally:
            self._cases_lock.release()

    def _load_cases(self) -> tuple[Mapping[str, Case], list[str]]:
        """This run's own cases first (a target's outputs beside the results, the file its manifest names),
        then the ``--cases`` files: runs of different case sets may share ids."""
        paths: list[Path] = list(self.own_cases)
        warns: list[str] = []
        man = self.table.manifest
        for beside in own_files(self.path):  # a target's outputs (referee run), a Python run's cases
            if beside.is_file() and not any(same_file(beside, q) for q in paths):
                paths.append(beside)
        if man is not None and man.eval_set is not None:
            recorded = Path(man.eval_set.path)
            for cand in (recorded, self.path.parent / recorded, self.path.parent / recorded.name):
                if cand.is_file():
                    paths.append(cand)
                    break
            else:
                if not self.cases_paths and not paths:
                    warns.append(f"the cases file named in the run manifest ({recorded}) was not found: "
                                 "pass --cases to show inputs and outputs")
        paths += [p for p in self.cases_paths if not any(same_file(p, q) for q in paths)]
        maps: list[Mapping[str, Case]] = []
        for p in paths:
            try:
                if p.suffix.lower() in (".jsonl", ".ndjson") and p.stat().st_size > LAZY_BYTES:
                    lazy = LazyCases(p)  # read by offset: a million cases are not held as objects
                    warns += lazy.warnings
                    maps.append(lazy)
                    continue
                own: dict[str, Case] = {}
                for c in load_cases(p).cases:
                    own.setdefault(c.id, c)
                maps.append(own)
            except (InputError, OSError) as exc:
                warns.append(f"cases not shown: {exc}")
        # The first file holding an id wins (a run's own cases before the shared ones).
        out: Mapping[str, Case] = maps[0] if len(maps) == 1 else ChainMap(*maps)  # type: ignore[arg-type]
        return out, warns

    @property
    def indexed(self) -> bool:
        return self._index is not None

    # -- summaries -------------------------------------------------------------------------------------

    def cached_summary(self, key: tuple[Any, ...]) -> dict[str, Any] | None:
        return self._summaries.get(key)

    def store_summary(self, key: tuple[Any, ...], value: dict[str, Any]) -> None:
        self._summaries[key] = value
        while len(self._summaries) > _CACHED:  # a long review session keys one agreement per label: keep recent
            del self._summaries[next(iter(self._summaries))]

    # -- reading rows ----------------------------------------------------------------------------------

    def read_row(self, i: int) -> dict[str, Any]:
        return self.table.read_rows([i]).get(i, {})

    def info(self) -> dict[str, Any]:
        t = self.table
        man = t.manifest
        return {
            "run": self.key, "path": str(self.path), "name": self.path.name, "label": self.label(), "rows": len(t),
            "cases": len(set(t.ids)), "scored": int((t.status == SCORED).sum()),
            "unscored": int((t.status == UNSCORED).sum()), "error": int((t.status == ERROR).sum()),
            "categories": sorted(t.category_names, key=str.lower), "indexed": self.indexed,
            "evaluators": self._index.evaluators if self._index else None,
            "warnings": t.warnings[:20] + (self._index.case_warnings if self._index else []),
            "manifest": None if man is None else {
                "kind": man.kind, "status": man.status, "created_at": man.created_at,
                "judge": None if man.judge is None else f"{man.judge.provider}/{man.judge.model}",
                "system_under_test": man.system_under_test,
                "eval_set": None if man.eval_set is None else man.eval_set.path,
            },
            "generation": self.generation,
        }


@dataclass
class Query:
    """Filters, sort and page of the case table (every field optional)."""

    status: str | None = None
    passed: bool | None = None
    category: str | None = None
    evaluator: str | None = None
    flag: str | None = None
    q: str | None = None
    labelled: bool | None = None
    sort: str = "row"
    desc: bool = False
    offset: int = 0
    limit: int = 50
    threshold: float = 0.7
    pass_rule: str = "threshold"
    ranges: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    """``score``/``cost``/``latency`` -> (min, max), both inclusive; rows without a value never match."""


RANGE_KEYS = ("score", "cost", "latency")


def passes(table: ResultsTable, rows: NDArray[np.int64], threshold: float, rule: str) -> NDArray[np.int8]:
    """Per row 1 pass, 0 fail, -1 not scored (the rule of ``referee score``)."""
    ok = table.row_passes(rows, threshold, rule)
    out = np.where(ok, 1, 0).astype(np.int8)
    out[table.status[rows] != SCORED] = -1
    return out


def select(run: Run, qy: Query, labelled_ids: set[str]) -> tuple[NDArray[np.int64], int]:
    """Row indices of one page, and the total matching ``qy``."""
    t = run.table
    n = len(t)
    mask = np.ones(n, dtype=bool)
    all_rows = np.arange(n, dtype=np.int64)
    if qy.status:
        code = {v: k for k, v in STATUS_NAMES.items()}.get(qy.status)
        if code is None:
            raise ValueError(f"status must be one of {', '.join(STATUS_NAMES.values())}")
        mask &= t.status == code
    if qy.passed is not None:
        mask &= passes(t, all_rows, qy.threshold, qy.pass_rule) == (1 if qy.passed else 0)
    if qy.category:
        key = qy.category.strip().lower()
        codes = [c for c, k in enumerate(t.categories) if k == key or (not k and key == "(uncategorized)")]
        mask &= np.isin(t.category, np.asarray(codes, dtype=np.int32))
    for name, (lo, hi) in qy.ranges.items():
        col = {"score": t.score, "cost": t.cost, "latency": t.latency}[name]
        with np.errstate(invalid="ignore"):
            if lo is not None:
                mask &= col >= lo
            if hi is not None:
                mask &= col <= hi
    if qy.labelled is not None:
        lab = np.fromiter((i in labelled_ids for i in t.ids), dtype=bool, count=n)
        mask &= lab if qy.labelled else ~lab
    need_index = bool(qy.evaluator or qy.flag or qy.q or qy.sort == "evaluator")
    if need_index:
        idx = run.index()
        if qy.evaluator:
            mask &= np.fromiter((e == qy.evaluator for e in idx.evaluator), dtype=bool, count=n)
        if qy.flag:
            fm = idx.flag_mask.get(qy.flag)
            if fm is None:
                fm = np.fromiter((qy.flag in fl for fl in idx.flags), dtype=bool, count=n)
            mask &= fm
        if qy.q:
            words = qy.q.casefold().split()
            cand = np.nonzero(mask)[0].tolist()
            keep = [i for i in cand if all(w in idx.search[i] for w in words)]
            mask = np.zeros(n, dtype=bool)
            mask[keep] = True
    rows = all_rows[mask]
    rows = _sort(run, rows, qy)
    total = len(rows)
    return rows[qy.offset:qy.offset + qy.limit], total


def _sort(run: Run, rows: NDArray[np.int64], qy: Query) -> NDArray[np.int64]:
    t = run.table
    if qy.sort not in SORT_KEYS:
        raise ValueError(f"sort must be one of {', '.join(SORT_KEYS)}")
    if qy.sort == "row":
        return rows[::-1] if qy.desc else rows
    if qy.sort in ("score", "cost", "latency"):
        col = {"score": t.score, "cost": t.cost, "latency": t.latency}[qy.sort][rows]
        # NaN (no value) sorts last in both directions.
        keyv = np.where(np.isnan(col), np.inf, -col if qy.desc else col)
        return rows[np.lexsort((rows, keyv))]
    if qy.sort in ("status", "passed"):
        col2 = t.status[rows] if qy.sort == "status" else passes(t, rows, qy.threshold, qy.pass_rule)
        col2 = col2.astype(np.int64)
        return rows[np.lexsort((rows, -col2 if qy.desc else col2))]
    if qy.sort == "id":
        keys = [t.ids[i] for i in rows.tolist()]
    elif qy.sort == "category":
        keys = [t.category_names[int(t.category[i])].lower() for i in rows.tolist()]
    else:
        idx = run.index()
        keys = [idx.evaluator[i] for i in rows.tolist()]
    order = sorted(range(len(keys)), key=keys.__getitem__, reverse=qy.desc)
    return rows[np.asarray(order, dtype=np.int64)] if order else rows


def review_queue(run: Run, kind: str, n: int, threshold: float, labelled_ids: set[str],
                 seed: int | None = None) -> list[int]:
    """Rows to review next: ``uncertain`` (cases a panel escalated to a human, unscored and error rows,
    ungrounded evidence, position bias, a panel split, scores nearest the threshold, in that order) or a ``random`` sample; cases already labelled are left out."""
    t = run.table
    n_rows = len(t)
    open_rows = np.fromiter((i not in labelled_ids for i in t.ids), dtype=bool, count=n_rows)
    if kind == "random":
        cand = np.nonzero(open_rows)[0].tolist()
        rng = random.Random(seed)
        return sorted(rng.sample(cand, min(n, len(cand))))
    if kind != "uncertain":
        raise ValueError("queue must be 'uncertain' or 'random'")
    idx = run.index()
    dist = np.abs(t.score - threshold)
    prio = np.full(n_rows, 9.0)
    near = ~np.isnan(dist) & (dist <= NEAR_THRESHOLD)
    prio[near] = 3.0 + dist[near]  # 3.0-3.1: nearest the threshold first
    prio[idx.flag_mask["panel_split"]] = 2.5  # the judges of a panel disagreed
    prio[idx.flag_mask["position_bias"]] = 2.0
    prio[idx.flag_mask["ungrounded"]] = 1.0
    prio[t.status != SCORED] = 0.0
    prio[idx.flag_mask["needs_human"]] = -1.0  # escalated to a person: first of all
    cand_rows = np.nonzero(open_rows & (prio < 9.0))[0]
    order = cand_rows[np.lexsort((cand_rows, prio[cand_rows]))]
    return [int(i) for i in order[:n].tolist()]


def clean(v: Any) -> Any:
    """JSON-safe: NaN and infinities become null (a score that does not exist is never a number)."""
    if isinstance(v, float):
        return None if math.isnan(v) or math.isinf(v) else v
    if isinstance(v, dict):
        return {str(k): clean(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [clean(x) for x in v]
    if isinstance(v, np.generic):
        return clean(v.item())
    return v


def resolve_inputs(paths: list[str]) -> list[Path]:
    out = []
    for p in paths:
        pp = Path(p)
        if not pp.is_file():
            raise InputError("file not found" if not pp.exists() else "not a file", file=p)
        out.append(pp)
    return out


def shared_id_warnings(case_paths: list[Path], n_runs: int) -> list[str]:
    """With several runs and several cases files for all of them, a case id in two files shows the first
    file's output for every run: said, with the way to bind each file to its run."""
    if n_runs < 2 or len(case_paths) < 2:
        return []
    seen: dict[str, Path] = {}
    clashes: dict[tuple[Path, Path], list[str]] = {}
    for p in case_paths:
        try:
            ids = [c.id for c in load_cases(p).cases]
        except InputError:
            continue  # said when the run reads it
        for cid in ids:
            first = seen.setdefault(cid, p)
            if first is not p:
                clashes.setdefault((first, p), []).append(cid)
    out = []
    for (a, b), ids in clashes.items():
        out.append(f"{len(ids)} case id(s) are in both {a} and {b} (e.g. {', '.join(ids[:3])}): every run shows "
                   f"{a.name}'s; bind each file to its run with --cases RUN={a.name} --cases RUN2={b.name} "
                   "(RUN: a results file's name, stem or position)")
    return out


def same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()
