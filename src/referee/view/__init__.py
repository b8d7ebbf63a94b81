"""``referee view``: a local web app over results files or the run history, and the human review that calibrates
the judge.

:func:`build_app` loads the runs and their label files; :class:`ViewServer` serves the page and the JSON API
(docs/view.md) on 127.0.0.1. Everything the page needs ships in ``static/``: no network, no CDN.
"""

from __future__ import annotations

from ..errors import UserError
from ._app import API_VERSION, ApiError, ViewApp, ViewOptions, labels_for
from ._history import History, open_history
from ._inputs import expand_inputs, parse_cases
from ._labels import MAX_REVIEWER, LabelStore, default_labels_path
from ._server import CSP, ViewServer
from ._store import Run, same_file, shared_id_warnings


def build_app(results: list[str], *, cases: list[str] | None = None, labels: str | None = None,
              opts: ViewOptions | None = None, lock: bool = True, index_now: bool = True) -> ViewApp:
    """Load ``results`` (results files, or run folders standing for the results files in them; one run each)
    and open each run's labels file (taking its one-writer lock). ``cases``: files every run reads its inputs
    and outputs from after its own, or ``RUN=FILE`` for one run only (RUN: its file name, stem or position).

    ``index_now=False`` leaves the background row index to the caller (``referee view`` starts it once it
    serves: the index thread holds the GIL for long stretches and would delay the first page otherwise);
    a filter that needs the index before then builds it on demand."""
    paths, notes = expand_inputs(results)
    for i, a in enumerate(paths):
        for b in paths[i + 1:]:
            if same_file(a, b):
                raise UserError(f"{a} is given twice")
    given = parse_cases(list(cases or []), paths)
    case_paths = given.shared
    inputs = paths + case_paths + [p for ps in given.bound.values() for p in ps]
    runs = [Run(str(i), p, case_paths, given.bound.get(i)) for i, p in enumerate(paths)]
    stores = [LabelStore(lp, inputs) for lp in labels_for(paths, labels)]
    if lock:
        taken: list[LabelStore] = []
        try:
            for s in stores:
                s.acquire()
                taken.append(s)
        except UserError:
            for s in taken:
                s.release()
            raise
    if index_now:
        for r in runs:
            r.start_indexing()
    app = ViewApp(runs, stores, opts or ViewOptions())
    app.warnings = notes + shared_id_warnings(case_paths, len(runs))
    return app


def close_app(app: ViewApp) -> None:
    """Release the label stores' locks of ``app`` (the viewer is done with them)."""
    for s in app.labels.values():
        s.release()
    if app.history is not None:
        app.history.close()


__all__ = [
    "API_VERSION", "ApiError", "CSP", "History", "LabelStore", "MAX_REVIEWER", "Run", "ViewApp", "ViewOptions",
    "ViewServer", "build_app", "close_app", "default_labels_path", "open_history",
]
