"""The Python API: :func:`evaluate` / :func:`evaluate_async`, :class:`Judge` and the :class:`EvalResult`.

One call runs every evaluator on every case through the same runner as ``referee run`` (concurrency, the
response cache, resume with ``out=``, the manifest), aggregates the rows with the same ``summarize`` as
``referee score`` and applies the same gates. **Usage**::

    import referee

    result = referee.evaluate(
        [{"input": "2+2?", "output": "4", "reference": "4"}],
        evaluators=["equals", {"regex": {"pattern": "^\\\\d+$"}}, lambda output: len(output) < 10],
    )
    result.passed, result.summary.overall.pass_rate, result.to_pandas()
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .._util._numbers import count, whole_number
from ..cases._case import Case, CaseSet, CaseStream, cases_from
from ..errors import MissingExtraError, UserError
from ..evaluators._base import Evaluator
from ..providers._base import Provider
from ._judge import Judge, as_judge, sync_twin

if TYPE_CHECKING:
    from ..aggregate import ResultsTable, Summary
    from ..gates._engine import GateResult, GateResults
    from ..results._manifest import RunManifest
    from ..results._schema import ResultRow
    from ..suites import Gates, Suite
    from .engines import Engine

def as_evaluator(fn: Callable[..., Any], name: str | None = None) -> Evaluator:
    """A plain function as an evaluator, sync or async, returning a bool (pass or fail), a number 0-1 (a score)
    or a :class:`~referee.CheckResult`. Its arguments follow one rule, by parameter name: ``output`` gets the
    output, ``case`` the case (in either order); without those names, ``fn(output)`` or ``fn(output, case)``
    (:mod:`referee.evaluators._functions`). A function that raises gives an ``error`` result for that case; the
    run goes on."""
    from ..evaluators._functions import function_adapter

    return function_adapter(fn, name)


def _entry(e: Any) -> Any:
    if isinstance(e, str | dict | Evaluator):
        return e
    if callable(e):
        return as_evaluator(e)
    raise UserError(f"evaluators: expected a name, a {{name: options}} mapping, an Evaluator or a function, got "
                    f"{type(e).__name__}")


@dataclass
class EvalResult:
    """The outcome of :func:`evaluate`: one row per case, the summary ``referee score`` prints, the gates."""

    rows: list[ResultRow]
    """One :class:`~referee.ResultRow` per case (in case order): with one evaluator, that evaluator's own row (as
    its command writes it); with several, the combined row, each evaluator one of its ``criteria`` and its typed
    result at ``row.check(label)``."""
    manifest: RunManifest
    """What was run, with what, and the totals (cost, tokens, calls, wall time)."""
    cases: list[Case] = field(repr=False, default_factory=list)
    path: Path | None = None
    """Where the rows were written (``out=``), if anywhere."""
    new_rows: list[ResultRow] = field(default_factory=list, repr=False)
    """The rows this call produced (``rows`` also holds those kept from an earlier run on ``out``)."""
    resume_note: str | None = field(default=None, repr=False)
    """What became of an earlier run's ``out`` file: rows kept (resumed), or the file set aside."""
    threshold: float = field(default=0.7, repr=False)
    """A case passes at this score (without a suite: :func:`grade`)."""
    gate_options: dict[str, Any] | None = field(default=None, repr=False)
    """The gates (without a suite), by their suite names."""
    _suite: Suite | None = field(default=None, repr=False)

    @property
    def run_id(self) -> str | None:
        """The run's id in the run history and its manifest (``referee runs show ID``)."""
        return self.manifest.run_id

    def results_table(self) -> ResultsTable:
        """The rows as :func:`referee.summarize` reads them, with the manifest (so ``summarize(result,
        baseline=other)`` compares two results as ``referee score --baseline`` compares their files)."""
        from ..aggregate._load import table_from_rows

        name = str(self.path) if self.path is not None else f"run {self.run_id[:12]}" if self.run_id else "<memory>"
        return table_from_rows(self.rows, name=name, manifest=self.manifest)

    @cached_property
    def _gate_setup(self) -> tuple[Gates, float, Path]:
        """(the gates, the pass threshold, the folder a relative baseline is read from)."""
        from ..suites import Gates

        if self._suite is None:
            return Gates(**_gates_of(self.gate_options)), self.threshold, Path(".")
        return self._suite.gates, self._suite.scoring.threshold, self._suite.base_dir

    @cached_property
    def _gated(self) -> tuple[Summary, list[GateResult]]:
        from ..suites._gating import gate_summary

        gates, threshold, base_dir = self._gate_setup
        return gate_summary(self.rows, gates, threshold=threshold, base_dir=base_dir, candidate=self.manifest)

    @property
    def summary(self) -> Summary:
        """Pass rate and mean with intervals, per category, unscored and errors counted (``referee score``)."""
        return self._gated[0]

    @property
    def scored(self) -> int:
        """Rows that were scored (neither ``unscored`` nor ``error``): none, and the run cannot pass."""
        return sum(1 for r in self.rows if r.status == "scored")

    @property
    def gates(self) -> GateResults:
        """Each gate's verdict (``flag``, ``failed``, ``message``), then the verdict rule's failed ``graded``
        entry when no row was scored."""
        from ..gates._engine import GateConfig, GateResults, graded_check

        # No gate asked (a command's run, a plain evaluate): the verdict rule's own check only, without
        # aggregating the rows or loading the suite models (every judging command's exit goes through here).
        no_gates = self._suite is None and not self.gate_options
        if not no_gates:
            from ..suites._gating import gate_config

            no_gates = gate_config(self._gate_setup[0]) == GateConfig()
        if no_gates:
            counts = {"scored": 0, "unscored": 0, "error": 0}
            for r in self.rows:
                counts[r.status] += 1
            entry = graded_check(counts["scored"], len(self.rows), unscored=counts["unscored"],
                                 errors=counts["error"])
            return GateResults([] if entry is None else [entry])
        return GateResults(self._gated[1])

    @property
    def passed(self) -> bool:
        """The verdict rule (as every command's exit code): True when every gate passed and at least one row
        was scored. With no gate given, that something was graded."""
        from ..gates._engine import verdict

        return verdict(self.gates, self.scored)

    def records(self) -> list[dict[str, Any]]:
        """One plain dict per case x evaluator (what :meth:`to_pandas` tabulates): a suite's combined row gives one
        per evaluator (its criteria), a one-evaluator row one (its own criteria are that evaluator's parts)."""
        from ..results._check import SUITE_EVALUATOR

        outputs = {c.id: c.output for c in self.cases}
        out: list[dict[str, Any]] = []
        for r in self.rows:
            base = {"id": r.id, "repeat": r.repeat, "category": r.category, "output": outputs.get(r.id),
                    "case_status": r.status, "case_score": r.score, "case_passed": r.passed}
            crits = r.criteria if r.evaluator == SUITE_EVALUATOR else []
            if not crits:
                out.append({**base, "evaluator": r.evaluator, "status": r.status, "score": r.score,
                            "passed": r.passed, "rationale": r.rationale, "error": r.error})
            for c in crits:
                out.append({**base, "evaluator": c.id, "status": c.status, "score": c.score, "passed": c.passed,
                            "rationale": c.rationale, "error": c.error})
        return out

    def to_pandas(self) -> Any:
        """A pandas DataFrame, one row per case x evaluator (needs the extra ``pandas``)."""
        try:
            import pandas as pd
        except ImportError:
            raise MissingExtraError("pandas", "pandas", "EvalResult.to_pandas()") from None
        return pd.DataFrame.from_records(self.records(), columns=_COLUMNS)

    def to_polars(self) -> Any:
        """A polars DataFrame, one row per case x evaluator (needs the extra ``polars``)."""
        try:
            import polars as pl
        except ImportError:
            raise MissingExtraError("polars", "polars", "EvalResult.to_polars()") from None
        recs = self.records()
        return pl.DataFrame({k: [r[k] for r in recs] for k in _COLUMNS}, strict=False)

    def save(self, path: str | Path) -> Path:
        """Write the rows and the manifest beside them (``x.jsonl`` + ``x.manifest.json``): the files
        ``referee run`` writes, which ``referee score`` and ``referee report`` read. A file already there is
        moved aside to ``x.prev.jsonl`` (results already paid for are never overwritten); the cases file
        itself is refused."""
        from ..results._io import ResultWriter
        from ..results._manifest import manifest_path
        from ..runner._session import _free_prev_name

        p = Path(path)
        src = self._suite.cases_path if self._suite is not None else None
        if src and p.resolve() == Path(src).resolve():
            raise UserError(f"save({p}): that is the cases file; write results to a file of their own")
        if p.is_dir():
            raise UserError(f"save({p}): is a directory; give a results file such as {p / 'results.jsonl'}")
        if self.path is not None and p.resolve() == self.path.resolve():
            return p  # already written there, as the run went
        if p.exists():
            prev = _free_prev_name(p)
            os.replace(p, prev)
            if manifest_path(p).exists():
                os.replace(manifest_path(p), manifest_path(prev))
        with ResultWriter(p, append=False) as w:
            w.write_all(self.rows)
        self.manifest.write(p)
        return p

    def __repr__(self) -> str:
        t = self.manifest.totals
        text = f"EvalResult({count(len(self.rows), 'row')}: {t.scored} scored, {t.unscored} unscored, {t.error} error"
        if self.rows:
            pr = self.summary.overall.pass_rate.estimate
            if pr is not None:
                text += f"; pass rate {pr:.1%}"
            text += "; gates " + ("passed" if self.passed else "FAILED")
        return text + ")"

    def _headline(self) -> tuple[str, bool]:
        """The verdict line (the one verdict rule, as ``passed``) and whether it passed."""
        if self.passed:
            n = len(self.gates)
            return (f"PASSED: {self.scored} of {count(len(self.rows), 'row')} scored"
                    + (f", {count(n, 'gate')} passed" if n else ", no gate set")), True
        why = "; ".join(f"{g.flag}: {g.message}" for g in self.gates if g.failed)
        return f"FAILED: {why or 'nothing was graded'}", False

    def _blocks(self) -> list[Any]:
        from .._util._display import Block
        from ..aggregate._display import summary_blocks, summary_headline

        blocks: list[Block] = []
        if self.rows:
            s = self.summary
            blocks += [summary_headline(s), *summary_blocks(s)]
        gates = self.gates
        if gates:  # with none, the verdict line above already says "no gate set"
            blocks += [gates.headline(), *gates.blocks()]
        t = self.manifest.totals
        blocks.append(f"{count(len(self.rows), 'row')}: {t.scored} scored, {t.unscored} unscored, {t.error} error")
        return blocks

    def _repr_html_(self) -> str:
        from .._util._display import to_html

        headline, ok = self._headline()
        return to_html(headline, self._blocks(), ok=ok)

    def __rich__(self) -> object:
        from .._util._display import to_rich

        headline, ok = self._headline()
        return to_rich(headline, self._blocks(), ok=ok)


_COLUMNS = ["id", "repeat", "category", "evaluator", "status", "score", "passed", "rationale", "error", "output",
            "case_status", "case_score", "case_passed"]


def _gates_of(gates: Gates | dict[str, Any] | None) -> dict[str, Any]:
    if gates is None:
        return {}  # no gate by default (as ``referee run``): the verdict rule alone, something must be graded
    if isinstance(gates, dict):
        return dict(gates)
    dump: dict[str, Any] = gates.model_dump(exclude_defaults=True)
    return dump


async def evaluate_async(
    cases: Any,
    evaluators: Sequence[Any],
    judge: Judge | str | Provider | Sequence[Judge | str | Provider] | None = None,
    *,
    threshold: float = 0.7,
    scoring: str = "weighted_mean",
    gates: Gates | dict[str, Any] | None = None,
    out: str | Path | None = None,
    concurrency: int | None = None,
    progress: bool | None = None,
    name: str = "evaluate",
    base_dir: str | Path = ".",
    target: Any = None,
    engine: Engine | str | None = None,
    panel: dict[str, Any] | None = None,
    store: str | bool | None = None,
    tags: Sequence[str] = (),
) -> EvalResult:
    """:func:`evaluate` for async code (``await referee.evaluate_async(...)``)."""
    from ..store import scope

    stream = cases if isinstance(cases, CaseStream) else None
    if stream is not None and (out is not None or target is not None or engine not in (None, "local")
                               or store not in (None, False)):
        # A stream's cases are known only once it is spent: nothing is written or recorded before that.
        raise UserError("evaluate: a stream of cases runs in this process and in memory: no out=, target=, engine= "
                        "or store=")
    # the run history: store=URL | False, tags=[...]; a stream is not a run of it (see above)
    with scope(store if stream is None else False, tags):
        from ..runner._session import error_row, execute_async
        from ..suites._loader import suite_from_dict
        from ._suite import EVALUATOR_LABEL, bind_settings, build_manifest
        from .engines import get_engine

        if concurrency is not None:
            concurrency = whole_number(concurrency, "evaluate(concurrency=...)")
        case_set: CaseSet = cases_from(cases) if stream is None else CaseSet(path=stream.path)
        if isinstance(evaluators, str | dict) or callable(evaluators):
            evaluators = [evaluators]
        data: dict[str, Any] = {
            # A stream's cases are checked as they are taken: the suite is checked without them.
            "name": name, "cases": [c.data for c in case_set.cases] if stream is None else [{"id": "stream"}],
            "evaluators": [_entry(e) for e in evaluators],
            "scoring": {"mode": scoring, "threshold": threshold}, "gates": _gates_of(gates),
        }
        suite = suite_from_dict(data, base_dir=base_dir, name=name)
        from_file = case_set.path if Path(case_set.path).is_file() else None
        suite = dataclasses.replace(suite, cases=case_set.cases, cases_path=from_file)
        client = None
        j: Judge | None = None
        one: Judge | str | Provider | None
        if isinstance(judge, list | tuple) or panel:
            from ._panel import panel_run_judge

            suite, one = panel_run_judge(suite, judge, panel)
        else:
            one = cast(Judge | str | Provider | None, judge)  # a str is a Sequence too: it is one judge here
        if suite.llm_specs:
            j = as_judge(one)
            client = j.client()
            suite = bind_settings(suite, j.settings(client))

        def manifest_of(s: Suite = suite, j: Judge | None = j, client: Any = client) -> RunManifest:
            judge_config = j.config(client.provider.model) if j is not None and client is not None else None
            return build_manifest(s, command=["referee.evaluate", name], judge_config=judge_config)

        # Built by the runner while the first calls are in flight (the manifest's models load then), unless a
        # target's identity must be added to it first.
        manifest: RunManifest | Callable[[], RunManifest] = manifest_of
        out_path = Path(out) if out is not None else None
        if out_path is not None:
            out_path.parent.mkdir(parents=True, exist_ok=True)
            if from_file is None and target is None:
                write_cases_beside(out_path, case_set.cases)
        run_concurrency = concurrency or (j.concurrency if j else 8)
        run = None
        if target is not None:
            # The system under test generates each case's output first (targets: docs/targets.md); its outputs are
            # kept beside ``out`` (``x.outputs.jsonl``) so a rerun generates nothing again.
            from ..targets import as_target
            from ..targets._run import TargetRun, config_sha256, target_info

            t = as_target(target, base_dir=base_dir)
            outputs = out_path.with_name(out_path.name.removesuffix(".jsonl") + ".outputs.jsonl") if out_path else None
            run = TargetRun.open(t, None, run_concurrency, outputs=outputs)
            info = target_info(t)
            built = manifest_of()
            built.extra["target"] = {**info.model_dump(exclude_none=True), "config_sha256": config_sha256(t)}
            built.extra["config_hash"] = f"{built.extra.get('config_hash', '')}+{config_sha256(t)}"
            built.system_under_test = info.model
            manifest = built
        # Where the cases are evaluated (this process, or a Ray cluster; generation stays here); rows come back to
        # this one writer.
        with get_engine(engine).start(suite, client=client, concurrency=run_concurrency) as where:
            evaluate_case: Callable[[Case], Any] = where.evaluate
            if run is not None:
                evaluate_case = run.evaluator(where.evaluate, EVALUATOR_LABEL)
            outcome = await execute_async(
                out=out_path, manifest=manifest, items=suite.cases if stream is None else stream,
                key=lambda c: (c.id, None, None),
                evaluate=evaluate_case,
                on_error=lambda c, exc: error_row(c.id, exc, evaluator=EVALUATOR_LABEL, category=c.category),
                client=client, concurrency=max(run_concurrency, where.concurrency), label="evaluating",
                show_progress=progress, cleanup=run.aclose if run is not None else None,
                on_rows=stream.on_rows if stream is not None else None,
            )
        if stream is not None:  # the cases the stream gave, now that it is spent
            from ..results._manifest import EvalSetInfo

            suite = dataclasses.replace(suite, cases=stream.cases)
            outcome.manifest.eval_set = EvalSetInfo.of(stream.path, [c.id for c in stream.cases],
                                                       sha256=stream.sha256)
        order = {c.id: i for i, c in enumerate(suite.cases)}
        rows = sorted(outcome.rows, key=lambda r: order.get(r.id, len(order)))
        cases_out = [run.generated.get(c.id, c) for c in suite.cases] if run is not None else list(suite.cases)
        return EvalResult(rows=rows, manifest=outcome.manifest, cases=cases_out, path=out_path,
                          new_rows=outcome.new_rows, resume_note=outcome.resume_note, _suite=suite)


def write_cases_beside(out: Path, cases: Any) -> Path:
    """The cases a run was given in memory, beside its results (``x.cases.jsonl``): ``referee view`` shows each
    case's input and output from it, with no ``--cases``."""
    import json
    import os

    path = out.with_name(out.name.removesuffix(".jsonl") + ".cases.jsonl")
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for c in cases:
            f.write(json.dumps(c.data, ensure_ascii=False, default=str) + "\n")
    os.replace(tmp, path)  # whole or not at all
    return path


evaluate = sync_twin(
    evaluate_async,
    """Run ``evaluators`` on ``cases`` and return an :class:`EvalResult`.

    Args:
        cases: a list of dicts (``id`` optional), of strings (outputs), a path to a JSONL / YAML / JSON / CSV /
            Parquet file, or a pandas or polars DataFrame.
        evaluators: names (``"is_json"``), ``{name: options}`` mappings as in a suite file (with ``weight``,
            ``threshold``, ``critical``, ``id``, ``field``), :class:`~referee.Evaluator` instances (such as
            ``referee.judges.LLMJudge(rubric=...)``) or plain functions (see :func:`as_evaluator`).
        judge: the LLM judge of the LLM evaluators: a :class:`Judge`, ``"provider:model"`` or a Provider;
            default :meth:`Judge.from_env`. A list of those is a panel (see ``panel``). Not used (and not
            needed) without LLM evaluators.
        threshold: a case passes when its combined score >= threshold.
        scoring: how evaluators combine into a case's score: ``weighted_mean``, ``all_pass`` or ``min``.
        gates: ``referee score``'s gates by their suite names (``{"fail_under": 0.9,
            "fail_if_unscored_above": 0}``); default: none, as ``referee run`` (``passed`` then means that
            something was graded; give ``{"fail_under": 1.0}`` for "every case must pass").
        out: also write the rows and manifest here as they complete; rerunning with the same ``out`` resumes.
        concurrency: cases in flight at once, a whole number >= 1 (default: the judge's, 8); anything else is a
            UserError.
        progress: None/True show progress (terminal or notebook) for runs over a second; False hides it.
        target: the system under test, run on each case before the evaluators (its output replaces the case's):
            a function ``(input) -> str | dict`` (or ``(case)``, ``(input, case)``), sync or async, or a target
            mapping as in a suite's ``targets:`` (a model and a prompt, ``http``, ``python``, ``exec``). A failed
            generation is an ``error`` row; rows carry ``target`` and the output's own ``cost_usd``/``latency_ms``.
        panel: with ``judge=[...]`` (a panel: each LLM evaluator judged by every judge of the list), how the
            verdicts combine: ``{"rule": "majority" | "mean" | "median" | "min" | "all_pass" | "weighted",
            "quorum": n, "tie": "unscored" | "strict" | "first", "threshold": x}`` (docs/panels.md); an entry's
            own ``panel`` key wins for that evaluator.
        engine: where the cases are evaluated: ``"local"`` (default, this process), ``"ray"`` (a local Ray
            cluster, or the Ray this program already initialised), ``"ray=HOST:PORT"``, or an engine such as
            ``referee.run.engines.RayEngine(rpm=600)`` (extra ``ray``; see docs/scale.md).
        store: the run history this run is recorded in: None (default) the one in force (``REFEREE_STORE``,
            else ``.referee/history.sqlite``), False none, or a store URL / SQLite file (docs/store.md).
        tags: tags of the run in the history. The run's id is ``result.run_id``.

    Works in a script and inside a running event loop (Jupyter, an async web handler): there the run goes on
    a loop of its own in a worker thread. Use :func:`evaluate_async` from async code to stay on your loop.
    """,
)
