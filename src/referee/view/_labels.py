"""Human labels given in the viewer, saved as they are given to a JSONL file that ``referee calibrate`` reads.

One line per (case id, reviewer): ``{"id", "score", "reviewer", ...}`` with ``score`` on 0-1 like the judge's
rows (pass 1.0 / fail 0.0; a rubric-scale score mapped from its scale, kept as ``raw_score`` + ``scale``; a
pairwise preference as the pairwise rows score it: a 1.0, tie 0.5, b 0.0), so
``referee calibrate results.jsonl labels.jsonl`` compares them unchanged. A new label is appended and flushed
to disk before the request returns; a reviewer changing their own label rewrites the file through a temporary
file and an atomic rename (``calibrate`` averages repeated ids, so a superseded label must not stay), merged into
the file as it is on disk at that moment. Lines the viewer did not write (other tools, other raters) are kept as
they are. One writer: the lock results files have (``results.lock``), beside the real labels file (a symlink to
it takes the same lock).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
import threading
from pathlib import Path
from typing import Any

from ..errors import InputError, RefereeError, UserError
from ..results._io import iter_jsonl

MAX_COMMENT = 5000
MAX_REVIEWER = 100
DEFAULT_REVIEWER = "anonymous"
_OPEN: set[str] = set()
"""Labels files a store of this process holds."""
_OPEN_MUTEX = threading.Lock()


class LabelError(RefereeError, ValueError):
    """A label that cannot be stored (answered with 400/404 and this message)."""

    def __init__(self, msg: str, status: int = 400) -> None:
        super().__init__(msg)
        self.status = status


def default_labels_path(results: Path) -> Path:
    """Where a results file's labels go: ``<results stem>.labels.jsonl`` beside it."""
    name = results.name
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else results.stem
    return results.with_name(f"{stem}.labels.jsonl")


def _reviewer_of(obj: dict[str, Any]) -> str:
    r = obj.get("reviewer", obj.get("rater"))
    return str(r) if r not in (None, "") else DEFAULT_REVIEWER


class LabelStore:
    """The labels of one run: read at start, appended to as labels are given."""

    def __init__(self, path: Path, inputs: list[Path]) -> None:
        self.path = path
        for inp in inputs:
            if path.exists() and os.path.samefile(path, inp) or path.resolve() == inp.resolve():
                raise UserError(f"the labels file {path} is an input of this view: labels are never written over "
                                "an input (name another file with --labels)")
        self._mutex = threading.Lock()
        self._lock: Any = None
        self.lines: list[dict[str, Any]] = []
        self.version = 0
        """Bumped on every write (cached agreement figures are keyed by it)."""
        if path.exists():
            if path.is_dir():
                raise InputError("is a directory, expected a labels JSONL file", file=str(path))
            for lineno, obj in iter_jsonl(path):
                if not isinstance(obj, dict) or obj.get("id") in (None, ""):
                    raise InputError("expected a JSON object with an 'id' (the viewer keeps every line of a "
                                     "labels file, so it will not start on one it cannot read)",
                                     file=str(path), line=lineno)
                self.lines.append(obj)

    def acquire(self) -> None:
        """Take the one-writer lock (``<labels>.lock``, as results files have): a second writer is refused."""
        from ..results._lock import ResultsLock

        key = str(self.path.resolve())
        with _OPEN_MUTEX:
            if key in _OPEN:  # the lock is re-entrant within a process; two stores would still clash
                raise UserError(f"the labels file {self.path} is already open in this process: one writer at a time")
            _OPEN.add(key)
        lock = ResultsLock(self.path)
        try:
            lock.acquire()
        except OSError as exc:  # e.g. results in a read-only folder
            _OPEN.discard(key)
            raise UserError(f"cannot write the labels file {self.path} ({exc.strerror or exc}): name a writable "
                            "file with --labels") from None
        except UserError as exc:
            _OPEN.discard(key)
            m = re.search(r"in use by (pid \d+|another process)", str(exc))
            who = m.group(1) if m else "another process"
            raise UserError(f"the labels file {self.path} is in use by {who} (another referee view or run): one "
                            "writer at a time; stop it or pass another --labels") from None
        self._lock = lock

    def release(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None
            _OPEN.discard(str(self.path.resolve()))

    # -- queries -----------------------------------------------------------------------------------------

    def ids(self) -> set[str]:
        return {str(o["id"]) for o in self.lines}

    def for_id(self, case_id: str) -> list[dict[str, Any]]:
        return [o for o in self.lines if str(o["id"]) == case_id]

    def by_id(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for o in self.lines:
            out.setdefault(str(o["id"]), []).append(o)
        return out

    # -- writing -----------------------------------------------------------------------------------------

    def put(self, label: dict[str, Any]) -> bool:
        """Store ``label`` (already validated). Returns True when it replaced this reviewer's earlier label.

        The file is read again first (under the lock): a change is merged into what is on disk, so a line
        another tool or rater added since the viewer started is never written over from this viewer's memory.
        """
        key = (str(label["id"]), _reviewer_of(label))
        line = json.dumps(label, ensure_ascii=False, allow_nan=False) + "\n"
        with self._mutex:
            disk = self._read_disk()
            hits = [i for i, (_, o) in enumerate(disk) if o is not None and (str(o["id"]), _reviewer_of(o)) == key]
            if not hits:
                with open(self.path, "a", encoding="utf-8") as f:
                    if disk and not disk[-1][0].endswith("\n"):
                        f.write("\n")  # a last line without its newline (another tool's) stays its own line
                    f.write(line)
                    f.flush()
                    os.fsync(f.fileno())
                self.lines = [o for _, o in disk if o is not None] + [label]
                self.version += 1
                return False
            # This reviewer's first line for the case becomes the new label, later duplicates go; every other
            # line is written back exactly as it was read.
            kept = [(line, label) if i == hits[0] else (text if text.endswith("\n") else text + "\n", o)
                    for i, (text, o) in enumerate(disk) if i not in hits[1:]]
            self._rewrite("".join(text for text, _ in kept))
            self.lines = [o for _, o in kept if o is not None]
            self.version += 1
            return True

    def _read_disk(self) -> list[tuple[str, dict[str, Any] | None]]:
        """The file's non-blank lines now, each with its object (None for a line that is not one with an id)."""
        try:
            with open(self.path, encoding="utf-8", newline="") as f:
                texts = [t for t in f if t.strip()]
        except FileNotFoundError:
            return []
        out: list[tuple[str, dict[str, Any] | None]] = []
        for text in texts:
            try:
                obj = json.loads(text)
            except ValueError:
                obj = None
            out.append((text, obj if isinstance(obj, dict) and obj.get("id") not in (None, "") else None))
        return out

    def _rewrite(self, text: str) -> None:
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)


def build_label(body: Any, *, known: bool, results_name: str, pairwise: bool) -> dict[str, Any]:
    """Validate a POSTed label and turn it into the line to store. Raises :class:`LabelError`."""
    from ..evaluators._pairwise import SCORES as PAIRWISE_SCORES
    from ..rubrics._model import SCALES, normalise

    if not isinstance(body, dict):
        raise LabelError("expected a JSON object")
    allowed = {"run", "id", "passed", "score", "scale", "winner", "comment", "reviewer"}
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise LabelError(f"unknown field(s): {', '.join(unknown)} (allowed: {', '.join(sorted(allowed))})")
    cid = body.get("id")
    if not isinstance(cid, str) or not cid:
        raise LabelError("'id' must be a non-empty string")
    if not known:
        raise LabelError(f"no case with id {cid!r} in this run", status=404)
    given = [k for k in ("passed", "score", "winner") if body.get(k) is not None]
    if len(given) != 1:
        raise LabelError("give exactly one of 'passed' (true/false), 'score' (with 'scale') or 'winner' (a/b/tie)")
    out: dict[str, Any] = {"id": cid}
    kind = given[0]
    if kind == "passed":
        if not isinstance(body["passed"], bool):
            raise LabelError("'passed' must be true or false")
        out["score"] = 1.0 if body["passed"] else 0.0
        out["passed"] = body["passed"]
    elif kind == "score":
        v = body["score"]
        scale = body.get("scale", "0-1")
        if scale not in SCALES:
            raise LabelError(f"'scale' must be one of {', '.join(SCALES)}")
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise LabelError("'score' must be a number")
        lo, hi, integer = SCALES[scale]
        if not lo <= v <= hi or (integer and not float(v).is_integer()):
            what = "a whole number" if integer else "a number"
            raise LabelError(f"score {v!r} is outside the scale {scale}: give {what} from {lo:g} to {hi:g}")
        out["score"] = round(normalise(float(v), scale), 6)
        out["raw_score"] = v
        out["scale"] = scale
    else:
        if not pairwise:
            raise LabelError("'winner' is for pairwise rows; this row is not one")
        w = body["winner"]
        if w not in PAIRWISE_SCORES:
            raise LabelError("'winner' must be 'a', 'b' or 'tie'")
        out["score"] = PAIRWISE_SCORES[w]
        out["winner"] = w
    reviewer = body.get("reviewer") or DEFAULT_REVIEWER
    if not isinstance(reviewer, str) or len(reviewer) > MAX_REVIEWER or not reviewer.strip():
        raise LabelError(f"'reviewer' must be a name of at most {MAX_REVIEWER} characters")
    out["reviewer"] = reviewer.strip()
    comment = body.get("comment")
    if comment not in (None, ""):
        if not isinstance(comment, str) or len(comment) > MAX_COMMENT:
            raise LabelError(f"'comment' must be text of at most {MAX_COMMENT} characters")
        out["comment"] = comment
    out["results"] = results_name
    out["labelled_at"] = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    return out
