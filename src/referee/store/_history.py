"""Operations over the whole history: export a run as files, import results files, folders or another store
(so two CI caches merge; a run already stored is kept once), prune, check, and the history as DataFrames."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select, text

from ..errors import InputError, UserError
from . import _schema as s
from ._git import facts_of_manifest
from ._recorder import log, manifest_bytes, run_values, summary_of
from ._records import _RUN_COLS, record_of, utc_time
from ._settings import StoreError

if TYPE_CHECKING:
    from ..aggregate import ResultsTable
    from ..results._manifest import RunManifest
    from ..results._schema import ResultRow
    from ._store import RunRecord, Store

COMPACT_FREE_SHARE = 0.25
"""A SQLite store is compacted (``VACUUM``) after a delete or prune leaves more than this share of it free."""


@dataclass
class StoredRun:
    """A stored run loaded whole: its record, manifest and rows. ``summarize`` (``referee.summarize(run)``)
    reads it as it reads the run's results file beside its manifest (:meth:`results_table`); iterating gives the
    rows."""

    record: RunRecord
    manifest: RunManifest | None
    rows: list[ResultRow] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return self.record.id

    def __iter__(self) -> Iterator[ResultRow]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def results_table(self) -> ResultsTable:
        """The rows as a table named after the run, with the manifest: a red-team run's rows stay in the
        adversarial track and the self-grading check sees the judge, as when the run's file is read."""
        from ..aggregate._load import table_from_rows

        return table_from_rows(self.rows, name=f"run {self.run_id[:12]}", manifest=self.manifest)

    # A notebook or a terminal shows a stored run as `referee score` reports it, under where and when it ran.
    def _display(self) -> tuple[str, list[Any]]:
        from ..aggregate import summarize
        from ..aggregate._display import summary_blocks, summary_headline

        r = self.record
        summary = summarize(self)
        where = r.place() + (" (dirty)" if r.git_dirty else "")
        facts = (f"{r.kind} run of {r.suite or '-'}, {r.status}; {where}; started {r.started_at[:19]}"
                 + (f"; judge {r.judge}" if r.judge else "") + (f"; tags {', '.join(r.tags)}" if r.tags else ""))
        return f"run {r.id[:12]}: {summary_headline(summary)}", [facts, *summary_blocks(summary)]

    def __repr__(self) -> str:
        r = self.record
        return f"<StoredRun {r.id[:12]} {r.suite or '-'} {r.status}: {len(self.rows)} rows>"

    def _repr_html_(self) -> str:
        from .._util._display import to_html

        return to_html(*self._display())

    def __rich__(self) -> object:
        from .._util._display import to_rich

        return to_rich(*self._display())


def load_run(store: Store, ref: str) -> StoredRun:
    """The run ``ref`` names, with its manifest and every row: an id (or a unique prefix of it), ``last``,
    ``@COMMIT`` or a branch (its newest complete run), as ``referee runs show`` takes them. Raises ``UserError``
    saying what was searched when none is found."""
    from ._baseline import find_run

    rec = find_run(store, ref)
    return StoredRun(rec, store.manifest(rec.id), store.rows(rec.id))


def export_run(store: Store, ref: str, out: Path) -> tuple[Path, int]:
    """Write the run's rows (``out``) and manifest beside it, as the run wrote them. Returns (file, rows)."""
    from ..results._files import manifest_path
    from ..results._writer import ResultWriter

    run = load_run(store, ref)
    if out.exists():
        raise UserError(f"{out} exists; export to a new file (an output never overwrites)")
    beside = manifest_path(out)
    if run.manifest is not None and beside.exists():  # another run's manifest, which the export would replace
        raise UserError(f"{beside} exists (the manifest {out} would have beside it); export to a new file (an "
                        "output never overwrites)")
    out.parent.mkdir(parents=True, exist_ok=True)
    with ResultWriter(out, append=False) as w:
        w.write_all(run.rows)
    if run.manifest is not None:
        r = run.record  # where it ran, from the store (a run recorded before manifests carried it has it only here)
        run.manifest.extra["git"] = {k: v for k, v in (
            ("commit", r.git_commit), ("branch", r.git_branch), ("dirty", r.git_dirty), ("remote", r.git_remote),
            ("ci_provider", r.ci_provider), ("ci_commit", r.ci_commit), ("ci_ref", r.ci_ref),
            ("ci_run_id", r.ci_run_id)) if v is not None}
        run.manifest.write(out)
    stubs = [r for r in run.rows if isinstance(r.details, dict) and "store_stub" in r.details]
    if stubs:  # rows kept as stubs: say where the whole rows are, rather than pass the stubs off as the run
        files = sorted({str(r.details["store_stub"].get("file") or "?") for r in stubs})
        log.warning("note: %d row(s) of run %s were too large for the store and are stubs in %s; the whole rows "
                    "are in %s", len(stubs), run.run_id[:12], out, ", ".join(files[:3]))
    return out, len(run.rows)


def _file_run_id(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:32]


def results_files(paths: Sequence[str | Path]) -> list[Path]:
    """The results files named: files as given, folders searched for ``*.jsonl`` with a manifest beside."""
    from ..results._files import manifest_path

    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(f for f in p.rglob("*.jsonl") if f.is_file())  # never a pipe or device to block on
            runs = [f for f in found if manifest_path(f).exists()]
            if not runs:  # a folder that adds nothing is a mistake to say, not an import of 0 runs
                others = f"; {len(found)} .jsonl file(s) without one (name a file to import it alone)" if found else ""
                raise UserError(f"{p}: no results files in it (a results file has its .manifest.json beside "
                                f"it){others}")
            out += runs
        elif p.is_file():
            out.append(p)
        elif p.exists():
            raise UserError(f"{p}: not a regular file or a folder")
        else:
            raise UserError(f"{p}: no such file or folder")
    return out


_SKIPPED_SHOWN = 5
_RUN_ID = re.compile(r"[0-9a-f]{32}")


def import_results(store: Store, path: Path, *, tags: Sequence[str] = ()) -> tuple[str, bool]:
    """Record the results file ``path`` (and its manifest) as a run. Returns (run id, whether it was new): the same
    run imported twice (same ``run_id``, or a file without one with the same bytes) is kept once."""
    from pydantic import ValidationError

    from ..results._files import manifest_path
    from ..results._io import read_results
    from ..results._manifest import RunManifest

    try:
        manifest = RunManifest.read(path)
    except ValidationError as exc:  # the manifest and its field named, not pydantic's report and documentation link
        problem = exc.errors()[0]
        where = ".".join(str(x) for x in problem.get("loc", ())) or None
        raise InputError(f"not a run manifest ({problem.get('msg', 'invalid')})", file=str(manifest_path(path)),
                         field=where) from None
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: its manifest cannot be read: {exc}") from None
    beside = manifest is not None
    if manifest is None:
        manifest = RunManifest(kind="import", status="complete")
    if manifest.run_id is None:
        manifest.run_id = _file_run_id(path)
    elif not _RUN_ID.fullmatch(manifest.run_id):
        # Only an id as referee writes them: one such as "last", "main" or "" would shadow a name or be unnamable.
        raise InputError(f"{manifest.run_id[:40]!r} is not a run id (32 hex digits, as referee writes them)",
                         file=str(manifest_path(path)), field="run_id")
    try:
        store.get_run(manifest.run_id)
        return manifest.run_id, False
    except KeyError:
        pass
    # The history sorts and filters runs by these times: a manifest written elsewhere must hold real ones.
    times = {}
    for name, value in (("created_at", manifest.created_at), ("finished_at", manifest.finished_at)):
        try:
            times[name] = None if value is None else utc_time(value)
        except ValueError:
            raise UserError(f"{path}: its manifest's {name} {value!r} is not an ISO 8601 time") from None
    loaded = read_results(path)
    rows, skipped = loaded.rows, loaded.warnings
    if not rows and (skipped or not beside):
        # Not a results file (or an empty one, with no manifest saying a run wrote it): said as `referee score` says
        # it, never stored as an empty run.
        more = f" ({len(skipped)} line(s) skipped; first: {skipped[0]})" if skipped else ""
        raise InputError(f"no result rows{more}", file=str(path))
    for w in skipped[:_SKIPPED_SHOWN]:  # a row left out of the stored run is said, as `referee score` says it
        log.warning("warning: %s", w)
    if len(skipped) > _SKIPPED_SHOWN:
        log.warning("warning: %d more line(s) of %s skipped", len(skipped) - _SKIPPED_SHOWN, path)
    # A row is stored under its key (id, repeat, turn): a later duplicate would replace the first, which `referee
    # score` keeps, and the run's totals would count rows the store does not hold.
    firsts = {r.key: r for r in reversed(rows)}
    if len(firsts) < len(rows):
        dups = len(rows) - len(firsts)
        first = next(r for r in rows if firsts[r.key] is not r)
        log.warning("warning: skipped %d duplicate row(s) of %s (same id, repeat and turn; the first is id %r); the "
                    "first of each is kept", dups, path, first.id)
        rows = [r for r in rows if firsts[r.key] is r]
    values = run_values(manifest, results_path=str(path), git=facts_of_manifest(manifest.extra.get("git")))
    values["started_at"] = times["created_at"]
    store.begin_run(values, tags=tags, manifest_json=manifest_bytes(manifest))
    stubs = store.add_rows(manifest.run_id, rows, results_path=str(path))
    if stubs:
        log.warning("note: %d row(s) of %s larger than the store's bound (REFEREE_STORE_MAX_ROW_BYTES) are stored "
                    "as stubs that name the file", stubs, path)
    finish = _finish_values(manifest, rows)
    if times["finished_at"] is not None:
        finish["finished_at"] = times["finished_at"]
    cols, doc = summary_of(rows, manifest) if rows else ({}, None)
    finish.update(cols)
    store.finish_run(manifest.run_id, finish, summary_json=json.dumps(doc, sort_keys=True).encode()
                     if doc is not None else None)
    return manifest.run_id, True


def _finish_values(m: RunManifest, rows: Sequence[ResultRow]) -> dict[str, Any]:
    from ..results._files import utc_now_iso

    t = m.totals
    status = m.status if m.status != "running" else "interrupted"
    counts = {k: sum(1 for r in rows if r.status == k) for k in ("scored", "unscored", "error")}
    return {"status": status, "finished_at": m.finished_at or utc_now_iso(), "n_rows": len(rows),
            "n_scored": counts["scored"], "n_unscored": counts["unscored"], "n_error": counts["error"],
            "cost_usd": t.cost_usd, "input_tokens": t.input_tokens, "output_tokens": t.output_tokens,
            "wall_s": t.wall_s}


@contextmanager
def _source(url: str) -> Iterator[Store]:
    """Another store, opened to be read and never changed: an import's source is an input. A SQLite file is
    copied (SQLite's backup: a consistent snapshot, even while another process writes it) and the copy brought to
    this schema: reading the file itself would switch it to write-ahead logging, migrate it if it is older, and
    fold its log into it on closing. A server's store is read where it is: at this schema, or refused as opening
    it anywhere would be (older: `store upgrade`; newer: unchanged)."""
    from ._engine import current_revision, ensure_schema, refuse_newer
    from ._settings import display_url, lock_timeout_s, require_history, sqlite_file
    from ._store import Store

    def nothing() -> UserError:
        return UserError(f"{display_url(url)} holds no referee run history (no schema version): nothing to import")

    path = sqlite_file(url)  # a file named with ?options is a file too: copied, never opened to be changed
    if path is None:
        st = Store(url, prepare=False)
        try:
            if current_revision(st.engine) is None:
                raise nothing()
            ensure_schema(st.engine, url)  # at this schema: nothing to do; older or newer: refused, unchanged
            yield st
        finally:
            st.close()
        return
    require_history(url)
    try:
        src = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=lock_timeout_s())
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read {path}: {exc}") from None
    try:
        try:
            found = src.execute("SELECT version_num FROM alembic_version").fetchone()
        except sqlite3.DatabaseError as exc:  # no such table (another program's database), or not one at all
            if "no such table" in str(exc):
                raise nothing() from None
            raise StoreError(f"cannot read {path}: {exc}") from None
        revision = None if found is None else str(found[0])
        if revision is None:
            raise nothing()
        refuse_newer(revision, url)
        with _scratch(path) as tmp:
            copy = Path(tmp) / "history.sqlite"
            try:
                dst = sqlite3.connect(copy)
                try:
                    src.backup(dst)
                finally:
                    dst.close()
            except (OSError, sqlite3.Error) as exc:  # a full disk, an unwritable temporary folder
                raise StoreError(f"cannot copy {path} to read it (in {tempfile.gettempdir()}; TMPDIR chooses "
                                 f"another folder): {exc}") from None
            src.close()
            st = Store(f"sqlite:///{copy}")  # the copy brought to this schema
            try:
                yield st
            finally:
                st.close()
    finally:
        src.close()


@contextmanager
def _scratch(path: Path) -> Iterator[str]:
    """A temporary folder for the copy of ``path``, removed afterwards; one that cannot be made is said."""
    try:
        tmp = tempfile.TemporaryDirectory(prefix="referee-import-")
    except OSError as exc:
        raise StoreError(f"cannot copy {path} to read it: no temporary folder in {tempfile.gettempdir()} "
                         f"(TMPDIR chooses another): {exc}") from None
    with tmp as name:
        yield name


def import_store(store: Store, other: Store | str, *, tags: Sequence[str] = ()) -> tuple[int, int]:
    """Copy into ``store`` every run of ``other`` it does not hold (runs, tags, rows, their texts), each added
    run tagged ``tags`` too. ``other``: a store, or its URL or file, then read and never changed (a file at an
    earlier schema is read through a migrated copy). Returns (runs copied, runs already there)."""
    from ._settings import check_tags

    tags = check_tags(tags)
    if isinstance(other, str):
        with _source(other) as opened:
            return import_store(store, opened, tags=tags)
    from sqlalchemy.exc import StatementError

    have = {r for (r,) in _scalars(store, select(s.runs.c.id))}
    theirs = [r for (r,) in _scalars(other, select(s.runs.c.id))]
    copied = 0
    damaged: list[str] = []
    ins = store._ins()
    for run_id in theirs:
        if run_id in have:
            continue
        with other.engine.connect() as src:
            run = dict(src.execute(select(s.runs).where(s.runs.c.id == run_id)).mappings().one())
            problems = record_of([run[c] for c in _RUN_COLS]).problems
            if not isinstance(run_id, str) or problems:
                damaged.append(f"run {str(run_id)[:12]!r}: {'; '.join(problems[:3]) or 'its id is not text'}")
                continue
            theirs_tags = [t for (t,) in src.execute(select(s.run_tags.c.tag).where(s.run_tags.c.run_id == run_id))]
            run_tags = list(dict.fromkeys([*theirs_tags, *tags]))
            rows = [dict(m) for m in src.execute(select(s.rows).where(s.rows.c.run_id == run_id)).mappings()]
            hashes = {h for h in [run.get("manifest"), run.get("summary"), *(r["body"] for r in rows)] if h}
            texts: list[dict[str, Any]] = []
            hl = list(hashes)
            for i in range(0, len(hl), 500):
                texts += [dict(m) for m in src.execute(select(s.texts).where(s.texts.c.hash.in_(hl[i:i + 500])))
                          .mappings()]
        try:  # one transaction a run: a value the driver refuses (a damaged row) leaves none of the run behind
            with store.engine.begin() as dst:
                if texts:
                    dst.execute(ins(s.texts).on_conflict_do_nothing(index_elements=["hash"]), texts)
                dst.execute(ins(s.runs).on_conflict_do_nothing(index_elements=["id"]), [run])
                if run_tags:
                    dst.execute(ins(s.run_tags).on_conflict_do_nothing(index_elements=["run_id", "tag"]),
                                [{"run_id": run_id, "tag": t} for t in run_tags])
                for i in range(0, len(rows), 2000):
                    dst.execute(ins(s.rows).on_conflict_do_nothing(
                        index_elements=["run_id", "case_id", "rep", "turn"]), rows[i:i + 2000])
        except StatementError as exc:
            damaged.append(f"run {run_id[:12]}: {str(exc.orig or exc).splitlines()[0][:120]}")
            continue
        copied += 1
    if damaged:
        raise StoreError(f"{copied} runs copied from {other.display_url}; {len(damaged)} damaged ones were not: "
                         + "; ".join(damaged[:5]) + (" ..." if len(damaged) > 5 else "")
                         + f" (`referee store check --store {other.display_url}` says more)")
    return copied, len(theirs) - copied


def _scalars(store: Store, q: Any) -> list[Any]:
    with store.engine.connect() as conn:
        return list(conn.execute(q))


_AGE = re.compile(r"^(\d+)([dhw])$")


def parse_age(value: str) -> timedelta:
    m = _AGE.match(value.strip())
    if not m:
        raise UserError(f"--older-than {value!r}: give a number of days, hours or weeks (30d, 12h, 2w)")
    n, unit = int(m.group(1)), m.group(2)
    try:
        return timedelta(**{{"d": "days", "h": "hours", "w": "weeks"}[unit]: n})
    except OverflowError:  # past what a date can hold: longer ago than any run
        return timedelta.max


def prune_plan(store: Store, *, keep: int | None = None, older_than: str | None = None) -> list[RunRecord]:
    """The runs ``prune`` would delete: those older than the ``keep`` newest complete runs of their suite and
    configuration, and (when given) started more than ``older_than`` ago; both given, a run must match both."""
    if keep is None and older_than is None:
        raise UserError("prune needs --keep N and/or --older-than AGE")
    if keep is not None and keep < 0:
        raise UserError("--keep must be 0 or more")
    runs = store.list_runs()
    doomed = set()
    if keep is not None:
        # Complete runs are what is kept (a baseline is one): counting a killed run among the N, `--keep 1` kept
        # only it and deleted every complete run of its suite. A run newer than the N (one may be running now) stays.
        seen: dict[str, int] = {}
        for r in runs:  # newest first
            if r.status != "complete":
                if seen.get(r.identity, 0) >= keep:
                    doomed.add(r.id)
                continue
            seen[r.identity] = seen.get(r.identity, 0) + 1
            if seen[r.identity] > keep:
                doomed.add(r.id)
    else:
        doomed = {r.id for r in runs}
    if older_than is not None:
        age = parse_age(older_than)  # its own errors first: a malformed age is exit 2, not "nothing that old"
        try:
            cutoff = (datetime.now(UTC) - age).isoformat()
        except OverflowError:  # before year 1: no run started that long ago
            cutoff = ""
        doomed &= {r.id for r in runs if r.started_at is not None and r.started_at < cutoff}
    return [r for r in runs if r.id in doomed]


def compact_if_worth_it(store: Store) -> bool:
    """SQLite: ``VACUUM`` when more than a quarter of the file is free pages. Returns whether it ran."""
    if store.dialect != "sqlite":
        return False
    with store.engine.connect() as conn:
        free = conn.exec_driver_sql("PRAGMA freelist_count").scalar() or 0
        pages = conn.exec_driver_sql("PRAGMA page_count").scalar() or 0
    if pages and free / pages > COMPACT_FREE_SHARE:
        with store.engine.connect() as conn:
            conn.exec_driver_sql("VACUUM")
        return True
    return False


def check_store(url: str) -> list[str]:
    """What is wrong with the store at ``url`` (empty: nothing). Never changes it."""
    from sqlalchemy.exc import DBAPIError

    from ._engine import current_revision, make_engine
    from ._revision import HEAD, REVISIONS
    from ._settings import display_url, scrub

    problems: list[str] = []
    where = display_url(url)
    try:
        engine = make_engine(url)
    except StoreError as exc:
        return [str(exc)]
    try:
        try:
            rev = current_revision(engine)
        except DBAPIError as exc:
            return [f"{where} cannot be read: {scrub(str(exc.orig), url)}"]
        if rev is None:
            return [f"{where} has no run history schema (an empty or foreign database)"]
        if rev not in REVISIONS:
            problems.append(f"{where} was written by a newer referee (schema {rev}; this one knows up to {HEAD})")
        elif rev != HEAD:
            problems.append(f"{where} has schema {rev}; `referee store upgrade` brings it to {HEAD}")
        with engine.connect() as conn:
            if engine.dialect.name == "sqlite":
                for (line,) in conn.execute(text("PRAGMA integrity_check")):
                    if line != "ok":
                        problems.append(f"{where}: integrity check: {line}")
            bad = conn.execute(
                select(s.runs.c.id, s.runs.c.n_rows, func.count(s.rows.c.case_id))
                .select_from(s.runs.outerjoin(s.rows, s.rows.c.run_id == s.runs.c.id))
                .where(s.runs.c.status == "complete").group_by(s.runs.c.id, s.runs.c.n_rows)
                .having(func.count(s.rows.c.case_id) != s.runs.c.n_rows)).all()
            for run_id, want, got in bad[:20]:
                problems.append(f"run {str(run_id)[:12]}: {got} rows stored, its totals say {want!r}")
            damaged = [r for r in (record_of(v) for v in conn.execute(select(*[s.runs.c[c] for c in _RUN_COLS])))
                       if r.problems]
            for r in damaged[:20]:
                problems.append(f"run {r.id[:12]}: " + "; ".join(r.problems))
            missing = conn.execute(select(func.count()).select_from(s.rows).where(
                ~s.rows.c.body.in_(select(s.texts.c.hash)))).scalar_one()
            if missing:
                problems.append(f"{missing} rows point at a text that is not stored")
            orphans = conn.execute(select(func.count()).select_from(s.rows).where(
                ~s.rows.c.run_id.in_(select(s.runs.c.id)))).scalar_one()
            if orphans:
                problems.append(f"{orphans} rows belong to no run (a run deleted while it was recording); "
                                "the next `referee runs delete` or `runs prune` that deletes a run removes them")
            problems += _damaged_texts(conn)
    except DBAPIError as exc:
        problems.append(f"{where} cannot be read: {scrub(str(exc.orig), url)}")
    finally:
        engine.dispose()
    return problems


_CHECK_BATCH = 500
_CHECK_SHOWN = 20


def _damaged_texts(conn: Any) -> list[str]:
    """Every stored text read back as the store reads it (bounded) and held to its hash, in key order a batch at
    a time: a text that does not decompress, would expand past the bound, or is not what its hash says."""
    from ._codec import _unpack, digest, max_text_bytes

    max_text_bytes()  # a malformed REFEREE_STORE_MAX_ROW_BYTES is said once, not as every packed text "damaged"
    out: list[str] = []
    bad = 0
    after: bytes | None = None
    while True:
        q = select(s.texts.c.hash, s.texts.c.packed, s.texts.c.data).order_by(s.texts.c.hash).limit(_CHECK_BATCH)
        if after is not None:
            q = q.where(s.texts.c.hash > after)
        batch = conn.execute(q).all()
        for h, packed, data in batch:
            try:
                why = None if digest(_unpack(packed, data)) == bytes(h) else "its content does not match its hash"
            except StoreError as exc:
                why = str(exc)
            if why is not None:
                bad += 1
                if bad <= _CHECK_SHOWN:
                    out.append(f"text {bytes(h).hex()[:12]}: {why}")
        if len(batch) < _CHECK_BATCH:
            break
        after = bytes(batch[-1][0])
    if bad > _CHECK_SHOWN:
        out.append(f"{bad} damaged texts in all (the first {_CHECK_SHOWN} above)")
    return out


def runs_frame(store: Store, **filters: Any) -> Any:
    """The runs matching ``filters`` (as ``Store.list_runs``) as a pandas DataFrame, one row per run."""
    try:
        import pandas as pd
    except ImportError:
        from ..errors import MissingExtraError

        raise MissingExtraError("pandas", "pandas", "referee.runs() as a DataFrame") from None
    recs = store.list_runs(**filters)
    cols = list(recs[0].as_dict()) if recs else list(_record_fields())
    return pd.DataFrame([r.as_dict() for r in recs], columns=cols)


def rows_frame(store: Store, ref: str) -> Any:
    """One stored run's rows as a pandas DataFrame (id, status, score, passed, category, evaluator, ...)."""
    try:
        import pandas as pd
    except ImportError:
        from ..errors import MissingExtraError

        raise MissingExtraError("pandas", "pandas", "a stored run's rows as a DataFrame") from None
    run = load_run(store, ref)
    cols = ("id", "repeat", "turn", "status", "score", "passed", "category", "evaluator", "rationale", "error",
            "latency_ms", "cost_usd")
    return pd.DataFrame([{"run_id": run.run_id, **{c: getattr(r, c) for c in cols}} for r in run.rows],
                        columns=["run_id", *cols])


def _record_fields() -> list[str]:
    from ._store import RunRecord

    return list(RunRecord.__dataclass_fields__)
