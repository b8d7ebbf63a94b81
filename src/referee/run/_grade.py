""":func:`grade` and :func:`compare`: cases graded by an LLM judge with a prompt template (``referee judge``
and ``referee pairwise`` are each one call of them).

**Usage**::

    result = referee.grade("cases.jsonl", template_file="judge.txt", judge="openai:gpt-4o-mini",
                           out="results.jsonl")
    result.rows[0].score, result.rows[0].criteria, result.summary.overall.pass_rate

A row per case (per sample with ``repeat``), the seed's shape: ``evaluator: judge``, the reply's criteria, the
score ``overall_score``. Rows go to ``out`` as they complete; rerunning on the same ``out`` resumes.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ..cases._case import Case, cases_from
from ..errors import InputError, UserError
from ..providers._base import Provider
from ..results._files import text_sha256
from ..runner._client import JudgeClient
from ._evaluate import EvalResult
from ._judge import Judge, as_judge, sync_twin

if TYPE_CHECKING:
    from ..cases._templates import Preflight
    from ..evaluators._base import LLMEvaluator
    from ..results._manifest import RunManifest
    from ..results._schema import ResultRow
    from ..rubrics._model import Ungrounded

T = TypeVar("T")


async def grade_async(
    cases: Any,
    template: str | None = None,
    judge: Judge | str | Provider | None = None,
    *,
    template_file: str | Path | None = None,
    out: str | Path | None = None,
    category: str | None = None,
    criteria: Sequence[str] | None = None,
    repeat: int = 1,
    skip_invalid: bool = False,
    on_invalid: Callable[[str], None] | None = None,
    system_model: str | None = None,
    threshold: float = 0.7,
    gates: dict[str, Any] | None = None,
    progress: bool | None = None,
    command: list[str] | None = None,
    request_format: str = "referee",
) -> EvalResult:
    """:func:`grade` for async code."""
    from ..cases._templates import placeholders, preflight, read_template, with_line_problems
    from ..evaluators._judge import TemplateJudge
    from ..runner._session import error_row

    if repeat < 1:
        raise UserError(f"repeat={repeat}: must be >= 1")
    if (template is None) == (template_file is None):
        raise UserError("grade: give the template's text (template=) or its file (template_file=), not both")
    template_path = str(template_file) if template_file is not None else None
    text = read_template(template_file) if template_file is not None else str(template)
    case_set = cases_from(cases, skip_bad_lines=skip_invalid)
    pf = with_line_problems(preflight(case_set.cases, placeholders(text)), case_set.problems)
    # Before any key is looked at: a missing key is never reported ahead of invalid cases.
    _require_valid(pf, _source(cases, case_set.path), skip_invalid=skip_invalid, on_problem=on_invalid, out=out)

    expected = [c.strip() for c in criteria if c.strip()] if criteria else None
    _check_request_format(request_format)
    tj = TemplateJudge(text, category=category, expected_criteria=expected, request_format=request_format)
    items: list[tuple[Case, int | None]] = [(c, r if repeat > 1 else None) for c in pf.valid for r in range(repeat)]
    return await _execute(_Plan(
        "judge", "referee.grade", tj, pf.valid, _source(cases, case_set.path), _cases_sha256(cases, case_set.cases),
        items=items, key=lambda it: (it[0].id, it[1], None), evaluate=lambda it: tj.judge_row(it[0], it[1]),
        on_error=lambda it, exc: error_row(it[0].id, exc, evaluator=tj.evaluator,
                                           category=it[0].category or category, repeat=it[1]),
        label="judging", skipped=pf.skipped, repeat=repeat, template_path=template_path,
        # referee's format keeps the hash of earlier runs, so they still resume.
        config_hash=text_sha256(",".join(expected or []) + ("" if request_format == "referee"
                                                           else f"\x00{request_format}"))
        if expected or request_format != "referee" else None,
        extra={"request_format": request_format} if request_format != "referee" else {},
    ), judge, out=out, system_model=system_model, threshold=threshold, gates=gates, progress=progress,
        command=command)


grade = sync_twin(
    grade_async,
    """Grade ``cases`` with an LLM judge and a prompt ``template`` (``referee judge``'s run).

    Args:
        cases: as for :func:`evaluate` (a path, a list of dicts, a DataFrame).
        template: the prompt, with ``{placeholders}`` filled from each case (case text delimited as data).
        template_file: instead of ``template``, the file it is read from (recorded in the manifest).
        judge: a :class:`Judge`, ``"provider:model"`` or a Provider (default :meth:`Judge.from_env`).
        out: also write rows and the manifest here as they complete; a rerun with the same ``out`` resumes
            (finished rows are kept, errors retried; another configuration's file is moved aside).
        category: the category of the rows of cases without one (a case's own category wins).
        criteria: criterion names the reply must contain (a reply missing one is unscored).
        repeat: judge every case this many times with distinct seeds (bypassing the cache).
        skip_invalid: leave out cases missing a placeholder's field or repeating an id (else a UserError).
        on_invalid: called with each invalid case's description (file:line, what is wrong) before the run.
        system_model: the model that wrote the outputs (rows it judges itself are flagged ``self_grading``).
        threshold, gates: for :attr:`EvalResult.summary` and :attr:`EvalResult.passed`, as in :func:`evaluate`.
        request_format: ``referee`` (system prompt saying case text is data, neutralised values, the verdict
            schema as structured output) or ``seed`` (the seed runner's exact request: the filled template as
            the one user message; fewer tokens, weaker defences).
    """,
)


def _check_request_format(request_format: str) -> None:
    from ..evaluators._prompt_guard import REQUEST_FORMATS

    if request_format not in REQUEST_FORMATS:
        raise UserError(f"request_format={request_format!r}: one of {', '.join(REQUEST_FORMATS)}")


_RUNNER_FIELDS = ("response_1", "response_2")
"""Filled by the run for each order, so they are not case fields."""


async def compare_async(
    cases: Any,
    template: str | None = None,
    judge: Judge | str | Provider | None = None,
    *,
    template_file: str | Path | None = None,
    out: str | Path | None = None,
    category: str | None = None,
    name_a: str | None = None,
    name_b: str | None = None,
    reconcile: str = "strict",
    skip_invalid: bool = False,
    on_invalid: Callable[[str], None] | None = None,
    system_model: str | None = None,
    threshold: float = 0.5,
    gates: dict[str, Any] | None = None,
    progress: bool | None = None,
    command: list[str] | None = None,
    request_format: str = "referee",
) -> EvalResult:
    """:func:`compare` for async code."""
    from ..cases._templates import placeholders, preflight, read_template, with_line_problems
    from ..evaluators._pairwise import RECONCILE_MODES, PairwiseJudge, Reconcile

    if reconcile not in RECONCILE_MODES:
        raise UserError(f"reconcile={reconcile!r}: one of {', '.join(RECONCILE_MODES)}")
    mode: Reconcile = "average" if reconcile == "average" else "strict"
    if (template is None) == (template_file is None):
        raise UserError("compare: give the template's text (template=) or its file (template_file=), not both")
    template_path = str(template_file) if template_file is not None else None
    text = read_template(template_file) if template_file is not None else str(template)
    keys = placeholders(text)
    missing = [k for k in _RUNNER_FIELDS if k not in keys]
    if missing:
        raise UserError(f"{template_path or 'template'}: the template must use {{response_1}} and {{response_2}} "
                        f"(missing: {', '.join('{' + k + '}' for k in missing)})")
    case_set = cases_from(cases, skip_bad_lines=skip_invalid)
    required = ["output_a", "output_b", *[k for k in keys if k not in _RUNNER_FIELDS]]
    pf = with_line_problems(preflight(case_set.cases, list(dict.fromkeys(required)), label="pairwise template"),
                            case_set.problems)
    _require_valid(pf, _source(cases, case_set.path), skip_invalid=skip_invalid, on_problem=on_invalid, out=out)

    _check_request_format(request_format)
    pj = PairwiseJudge(text, category=category, name_a=name_a, name_b=name_b, reconcile=mode,
                       request_format=request_format)
    return await _execute(_Plan(
        "pairwise", "referee.compare", pj, pf.valid, _source(cases, case_set.path),
        _cases_sha256(cases, case_set.cases), evaluate=pj.judge_row, on_error=_error_rows(pj.evaluator, category),
        label="pairwise", skipped=pf.skipped, template_path=template_path,
        # strict keeps the hash of runs made before reconcile existed, so they still resume.
        config_hash=text_sha256(f"{name_a}\x00{name_b}" + ("" if mode == "strict" else f"\x00{mode}")
                                + ("" if request_format == "referee" else f"\x01{request_format}"))
        if name_a or name_b or mode != "strict" or request_format != "referee" else None,
        extra={**({"request_format": request_format} if request_format != "referee" else {}), "reconcile": mode},
    ), judge, out=out, system_model=system_model, threshold=threshold, gates=gates, progress=progress,
        command=command)


compare = sync_twin(
    compare_async,
    """Judge each case's ``output_a`` against its ``output_b`` in both orders with a prompt ``template``
    (``referee pairwise``'s run): one row per case with ``winner`` (a, b, tie), ``position_bias_detected``
    and the score (a 1.0, b 0.0, tie 0.5).

    Args:
        template: the prompt, using ``{response_1}`` and ``{response_2}`` (filled in each order) and any case
            field; ``template_file``: instead, the file it is read from (recorded in the manifest).
        reconcile: ``strict`` (orders that disagree are a tie) or ``average`` (the mean of the two orders).
        name_a, name_b: the two systems' names (stored in each row's details; default the cases' ``system_a``
            and ``system_b``).
        threshold, gates: for :attr:`EvalResult.summary` and :attr:`EvalResult.passed` (a passes at 0.5: a tie).
        The other arguments (``request_format`` included) are :func:`grade`'s.
    """,
)


def _require_valid(pf: Preflight, source: str, *, skip_invalid: bool, on_problem: Callable[[str], None] | None,
                   out: str | Path | None) -> None:
    """The seed's preflight outcome. When ``--skip-invalid`` leaves no case, the results file is still
    created (empty, as the seed's runners leave it: the next CI step finds its file) before the error."""
    from ..cases._templates import NoValidCases, require_valid

    try:
        require_valid(pf, source, skip_invalid=skip_invalid, on_problem=on_problem)
    except NoValidCases:
        if out is not None:
            Path(out).touch()
        raise



def _source(cases: Any, loaded_from: str) -> str:
    """The cases' file as the user named it (the manifest and messages say what was typed), else their name."""
    return str(cases) if isinstance(cases, str | Path) else loaded_from


def _cases_sha256(source: Any, cases: list[Case]) -> str | None:
    """The cases' identity in the manifest: a file's own hash (None here), else the hash of their data."""
    if isinstance(source, str | Path):
        return None
    return text_sha256(json.dumps([c.data for c in cases], sort_keys=True, default=str))


def unique_cases(cases: Any, *, on_invalid: Callable[[str], None] | None = None) -> tuple[str, list[Case], int]:
    """The cases (their source's name, the cases, how many were skipped): a duplicate id is reported to
    ``on_invalid`` and skipped (the first kept), as the seed does; no case at all is a :class:`UserError`."""
    case_set = cases_from(cases)
    seen: dict[str, Case] = {}
    skipped = 0
    for c in case_set.cases:
        if c.id in seen:
            if on_invalid is not None:
                on_invalid(f"{c.where}: duplicate id '{c.id}' (first at {seen[c.id].where}); the first is kept")
            skipped += 1
            continue
        seen[c.id] = c
    if not seen:
        raise UserError(f"no cases in {_source(cases, case_set.path)}")
    return _source(cases, case_set.path), list(seen.values()), skipped


def read_criteria(path: str | Path) -> dict[str, str]:
    """A criteria file: a YAML mapping of criterion id -> description (:class:`InputError` naming the file)."""
    from .._util._yaml import load as load_yaml

    if not Path(path).exists():
        raise InputError("file not found", file=str(path))
    data = load_yaml(str(path))
    if not isinstance(data, dict) or not data or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise InputError("expected a mapping of criterion id -> description", file=str(path))
    return data


async def judge_conversations_async(
    cases: Any,
    judge: Judge | str | Provider | None = None,
    *,
    mode: str = "final",
    criteria: Mapping[str, str] | str | Path | None = None,
    out: str | Path | None = None,
    category: str | None = None,
    on_invalid: Callable[[str], None] | None = None,
    system_model: str | None = None,
    threshold: float = 0.7,
    gates: dict[str, Any] | None = None,
    progress: bool | None = None,
    command: list[str] | None = None,
) -> EvalResult:
    """:func:`judge_conversations` for async code."""
    from ..evaluators._conversation import MODES, ConversationError, ConversationJudge, conversation_of

    if mode not in MODES:
        raise UserError(f"mode={mode!r}: one of {', '.join(MODES)}")
    criteria_path = str(criteria) if isinstance(criteria, str | Path) else None
    crit = read_criteria(criteria) if isinstance(criteria, str | Path) else (dict(criteria) if criteria else None)
    source, case_list, skipped = unique_cases(cases, on_invalid=on_invalid)
    try:
        cj = ConversationJudge(mode=mode, criteria=crit or {}, category=category, threshold=threshold)
    except ValueError as exc:
        raise UserError(f"judge_conversations: {exc}") from None
    rubric_hash = cj.template_hash or ""  # the mode and the criteria (ConversationJudge.default_template_hash)

    def key(c: Case) -> tuple[str, int | None, int | None]:
        """Per-turn rows carry their turn: a case is done when its first judged turn is in the file."""
        if mode != "per_turn":
            return (c.id, None, None)
        try:
            conv = conversation_of(c)
        except ConversationError:
            return (c.id, None, None)
        return (c.id, None, next(i + 1 for i, t in enumerate(conv) if t["role"] == "assistant"))

    return await _execute(_Plan(
        "conversation", "referee.judge_conversations", cj, case_list, source, _cases_sha256(cases, case_list),
        key=key, evaluate=cj.judge_rows, on_error=_error_rows(cj.row_evaluator, category), label="judging",
        skipped=skipped, template_path=criteria_path, template_hash=rubric_hash, extra={"mode": mode},
    ), judge, out=out, system_model=system_model, threshold=threshold, gates=gates, progress=progress,
        command=command)


judge_conversations = sync_twin(
    judge_conversations_async,
    """Judge multi-turn conversations (each case's ``turns``: ``[{role, content}]``; ``referee conversation``'s
    run).

    Args:
        mode: ``final`` (the last reply in the context of the turns before it), ``conversation`` (the whole
            exchange: consistency, memory, goal completion) or ``per_turn`` (a row per assistant reply, with
            its ``turn``).
        criteria: ``{id: description}`` replacing the mode's default rubric, or a YAML file of them.
        The other arguments are :func:`grade`'s (a duplicate id goes to ``on_invalid`` and is skipped).
    """,
)


def _read_checks(checks: Mapping[str, Any] | str | Path | None, cap: float | None) -> tuple[dict[str, Any], str]:
    """The trajectory checks' options (a mapping, or a YAML file: ``{checks, options, cap}`` or a bare list of
    check names) and the file's text (part of the configuration's identity)."""
    from .._util._yaml import load as load_yaml

    data: dict[str, Any] = {}
    text = ""
    if isinstance(checks, str | Path):
        if not Path(checks).exists():
            raise InputError("file not found", file=str(checks))
        loaded = load_yaml(str(checks))
        text = Path(checks).read_text(encoding="utf-8")
        if isinstance(loaded, list):  # a bare list of check names
            loaded = {"checks": loaded}
        if not isinstance(loaded, dict):
            raise InputError("expected a mapping with 'checks', 'options' and/or 'cap'", file=str(checks))
        data = loaded
    elif checks is not None:
        data = dict(checks)
    if cap is not None:
        data["cap"] = cap
    return data, text


async def check_trajectories_async(
    cases: Any,
    *,
    checks: Mapping[str, Any] | str | Path | None = None,
    cap: float | None = None,
    out: str | Path | None = None,
    category: str | None = None,
    on_invalid: Callable[[str], None] | None = None,
    threshold: float = 0.7,
    gates: dict[str, Any] | None = None,
    progress: bool | None = None,
    command: list[str] | None = None,
) -> EvalResult:
    """:func:`check_trajectories` for async code."""
    from ..evaluators._plugins import build
    from ..evaluators._trajectory import TrajectoryCheck, check_row

    source, case_list, skipped = unique_cases(cases, on_invalid=on_invalid)
    options, text = _read_checks(checks, cap)
    check = build("trajectory", options, where=f"{checks}: " if isinstance(checks, str | Path) else "")
    assert isinstance(check, TrajectoryCheck)

    async def evaluate(case: Case) -> ResultRow:
        return check_row(case, check.evaluate(case, case.output), evaluator="trajectory", category=category)

    return await _execute(_Plan(
        "trajectory", "referee.check_trajectories", None, case_list, source, _cases_sha256(cases, case_list),
        evaluate=evaluate, on_error=_error_rows("trajectory", category), label="checking", skipped=skipped,
        config_hash=text_sha256(repr(sorted(options.items())) + text),
    ), None, out=out, threshold=threshold, gates=gates, progress=progress, command=command)


async def judge_trajectories_async(
    cases: Any,
    judge: Judge | str | Provider | None = None,
    *,
    criteria: Mapping[str, str] | str | Path | None = None,
    max_chars: int = 200,
    out: str | Path | None = None,
    category: str | None = None,
    on_invalid: Callable[[str], None] | None = None,
    system_model: str | None = None,
    threshold: float = 0.7,
    gates: dict[str, Any] | None = None,
    progress: bool | None = None,
    command: list[str] | None = None,
) -> EvalResult:
    """:func:`judge_trajectories` for async code."""
    from ..evaluators._trajectory_judge import TRAJECTORY_CRITERIA, TrajectoryJudge

    if max_chars < 20:
        raise UserError(f"max_chars={max_chars}: at least 20")
    source, case_list, skipped = unique_cases(cases, on_invalid=on_invalid)
    criteria_path = str(criteria) if isinstance(criteria, str | Path) else None
    crit = (read_criteria(criteria) if isinstance(criteria, str | Path) else dict(criteria) if criteria
            else None) or TRAJECTORY_CRITERIA
    rubric_hash = text_sha256(repr(sorted(crit.items())) + f"|{max_chars}")
    try:
        tj = TrajectoryJudge(criteria=dict(crit), max_chars=max_chars, template_hash=rubric_hash, category=category,
                             threshold=threshold)
    except ValueError as exc:
        raise UserError(f"judge_trajectories: {exc}") from None
    return await _execute(_Plan(
        "trajectory-judge", "referee.judge_trajectories", tj, case_list, source, _cases_sha256(cases, case_list),
        evaluate=tj.judge_row, on_error=_error_rows("trajectory_judge", category), label="judging",
        skipped=skipped, template_path=criteria_path, template_hash=rubric_hash,
    ), judge, out=out, system_model=system_model, threshold=threshold, gates=gates, progress=progress,
        command=command)


@dataclass
class _Plan:
    """What one grading function's run is, declared; :func:`_execute` does the rest the same way for all (the
    judge, its binding, the manifest, the runner)."""

    kind: str
    """The manifest's ``kind`` (the command: ``judge``, ``pairwise``, ...)."""
    api: str
    """The manifest's ``command`` when the caller names none (``referee.grade``)."""
    evaluator: LLMEvaluator | None
    """Bound to the run's judge (None: checks by code, no judge)."""
    cases: list[Case]
    source: str
    sha256: str | None
    evaluate: Callable[[Any], Awaitable[ResultRow | list[ResultRow]]]
    on_error: Callable[[Any, BaseException], ResultRow]
    label: str
    items: Sequence[Any] | None = None
    """What the runner runs (default: ``cases``)."""
    key: Callable[[Any], RowKey] | None = None
    skipped: int = 0
    repeat: int = 1
    template_path: str | None = None
    template_hash: str | None = None
    """Default: the evaluator's, once bound."""
    config_hash: str | None = None
    """The options' identity (another configuration's results file is moved aside, not resumed)."""
    extra: dict[str, Any] = field(default_factory=dict)
    others: bool = True


async def _execute(plan: _Plan, judge: Judge | str | Provider | None, *, out: str | Path | None,
                   progress: bool | None, command: list[str] | None, system_model: str | None = None,
                   threshold: float = 0.7, gates: dict[str, Any] | None = None) -> EvalResult:
    """``plan`` run: its evaluator bound to the judge (after every usage error, so a missing key is never
    reported ahead of them), the manifest, then the runner."""
    client: JudgeClient | None = None
    concurrency = 4
    j: Judge | None = None
    if plan.evaluator is not None:
        j = as_judge(judge)
        client = j.client()
        plan.evaluator.bind(j.settings(client))
        concurrency = j.concurrency
    template_hash = plan.template_hash if plan.template_hash is not None else getattr(plan.evaluator,
                                                                                      "template_hash", None)

    def manifest() -> RunManifest:
        # Built by the runner while the first requests are in flight (pydantic loads meanwhile).
        from ..results._manifest import RunManifest, TemplateInfo

        judged: dict[str, Any] = {}
        if j is not None and client is not None:
            judged = {"judge": j.config(client.provider.model, plan.repeat), "system_under_test": system_model,
                      "template": TemplateInfo(path=plan.template_path, sha256=template_hash or "")}
        m = RunManifest.for_cases(plan.kind, plan.source, [c.id for c in plan.cases],
                                  command=command or [plan.api], sha256=plan.sha256, **judged)
        if plan.config_hash is not None:
            m.extra["config_hash"] = plan.config_hash
        m.extra.update(plan.extra)
        from ..cases._media import media_sha256

        if (media := media_sha256(plan.cases)) is not None:
            m.extra["media_sha256"] = media
        return m

    return await _run(plan.items if plan.items is not None else plan.cases, cases=plan.cases, manifest=manifest,
                      out=out, key=plan.key, evaluate=plan.evaluate, on_error=plan.on_error, client=client,
                      concurrency=concurrency, label=plan.label, skipped=plan.skipped, progress=progress,
                      threshold=threshold, gates=gates, others=plan.others)


async def _run(items: Sequence[T], *, cases: list[Case], manifest: RunManifest | Callable[[], RunManifest],
               out: str | Path | None,
               evaluate: Callable[[T], Awaitable[ResultRow | list[ResultRow]]],
               on_error: Callable[[T, BaseException], ResultRow], key: Callable[[T], RowKey] | None = None,
               client: JudgeClient | None, concurrency: int, label: str, skipped: int, progress: bool | None,
               threshold: float = 0.7, gates: dict[str, Any] | None = None, others: bool = True) -> EvalResult:
    """``items`` through the runner (rows written to ``out`` as they complete, resumed from it), as an
    :class:`EvalResult` whose rows are in case order (then sample, then turn). ``key`` says which row an item
    gives (default: one per case); ``others=False`` leaves out rows of cases no longer among ``cases``."""
    from ..runner._session import execute_async

    out_path = Path(out) if out is not None else None
    outcome = await execute_async(
        out=out_path, manifest=manifest, items=items, key=key or _case_key, evaluate=evaluate, on_error=on_error,
        client=client, concurrency=concurrency, label=label, skipped=skipped, show_progress=progress,
    )
    order = {c.id: i for i, c in enumerate(cases)}
    rows = [r for r in outcome.rows if others or r.id in order]
    rows.sort(key=lambda r: (order.get(r.id, len(order)), r.repeat or 0, r.turn or 0))
    return EvalResult(rows=rows, manifest=outcome.manifest, cases=cases, path=out_path, new_rows=outcome.new_rows,
                      resume_note=outcome.resume_note, threshold=threshold, gate_options=gates)


RowKey = tuple[str, int | None, int | None]
"""Which row of a results file an item gives: case id, sample (``repeat``), turn."""


def _case_key(case: Any) -> RowKey:
    return (case.id, None, None)


def _error_rows(evaluator: str, category: str | None) -> Callable[[Any, BaseException], ResultRow]:
    """A failed case as an ``error`` row (the run goes on)."""
    from ..runner._session import error_row

    return lambda c, exc: error_row(c.id, exc, evaluator=evaluator, category=getattr(c, "category", None) or category)


check_trajectories = sync_twin(
    check_trajectories_async,
    """Check agent trajectories by code, no judge (``referee trajectory``'s run): each case's trajectory (seed
    shape, OpenAI / Anthropic messages or OTel GenAI spans) against its ``expect`` block.

    Args:
        checks: ``{"checks": [names], "options": {check: {...}}, "cap": 0.5}`` or a YAML file of it (default:
            every check whose expectation a case states, plus loop and error-handling checks).
        cap: the highest score when a process check fails, even with a correct final answer (default 0.5).
        The other arguments are :func:`grade`'s (a duplicate id goes to ``on_invalid`` and is skipped).
    """,
)


judge_trajectories = sync_twin(
    judge_trajectories_async,
    """Grade agent trajectories with the trajectory judge (``referee trajectory --judge``'s run): tool
    selection, arguments, efficiency, final output; one row per case, one criterion each.

    Args:
        criteria: ``{id: description}`` replacing the default rubric, or a YAML file of them.
        max_chars: arguments and results longer than this are truncated in the prompt.
        The other arguments are :func:`grade`'s (a duplicate id goes to ``on_invalid`` and is skipped).
    """,
)


async def grade_rubric_async(
    cases: Any,
    rubric: str | Path = "agent-evaluation",
    judge: Judge | str | Provider | None = None,
    *,
    contexts: Mapping[str, str] | None = None,
    fail_below: float | None = None,
    ungrounded: str | None = None,
    out: str | Path | None = None,
    category: str | None = None,
    on_invalid: Callable[[str], None] | None = None,
    system_model: str | None = None,
    gates: dict[str, Any] | None = None,
    progress: bool | None = None,
    command: list[str] | None = None,
) -> EvalResult:
    """:func:`grade_rubric` for async code."""
    from ..cases._templates import preflight
    from ..evaluators._rubric import RubricJudge
    from ..rubrics import load_rubric

    rb = load_rubric(rubric)
    if rb.kind == "gold":
        raise UserError(f"{rubric} is a gold-standard criteria file: use `referee gold --criteria {rubric}`")
    case_set = cases_from(cases)
    pf = preflight(case_set.cases, ["output"], label="rubric")
    for problem in pf.problems:
        if on_invalid is not None:
            on_invalid(problem)
    if not pf.valid:
        raise UserError(f"no valid cases to evaluate in {_source(cases, case_set.path)}")
    try:
        rj = RubricJudge(rb, fail_below=fail_below, ungrounded=cast("Ungrounded | None", ungrounded),
                         category=category, contexts=dict(contexts or {}), system_under_test=system_model)
    except ValueError as exc:
        raise UserError(f"grade_rubric: {exc}") from None
    # The manifest's template hash is the rubric's, ungrounded override included: no stale resume.
    return await _execute(_Plan(
        "rubric", "referee.grade_rubric", rj, pf.valid, _source(cases, case_set.path),
        _cases_sha256(cases, case_set.cases), evaluate=rj.judge_row, on_error=_error_rows("rubric", category),
        label="rubric", skipped=pf.skipped, template_path=str(rubric),
        config_hash=text_sha256(json.dumps([sorted(rj.contexts.items()), rj.threshold])),
    ), judge, out=out, system_model=system_model, gates=gates, progress=progress, command=command)


grade_rubric = sync_twin(
    grade_rubric_async,
    """Grade each case's ``output`` (for its ``input``, the task) against a rubric, with the evidence for every
    score checked against the judged text (``referee evaluate --cases``'s run).

    Args:
        rubric: a shipped rubric's name (``agent-evaluation``) or a rubric YAML file.
        contexts: ``{name: text}`` the outputs should be grounded in (evidence is verified against them too).
        fail_below: a case fails when its composite is below this (default: the rubric's).
        ungrounded: what an evidence quote not found in the judged text costs (``invalid``, ``reask``,
            ``keep``; default: the rubric's).
        The other arguments are :func:`grade`'s (invalid cases go to ``on_invalid`` and are skipped).
    """,
)


async def grade_gold_async(
    cases: Any,
    criteria: str | Path = "gold-example-prd",
    judge: Judge | str | Provider | None = None,
    *,
    single_call: bool = False,
    judge_pass_only: bool = False,
    out: str | Path | None = None,
    source: str | None = None,
    skipped: int = 0,
    system_model: str | None = None,
    gates: dict[str, Any] | None = None,
    progress: bool | None = None,
    command: list[str] | None = None,
) -> EvalResult:
    """:func:`grade_gold` for async code."""
    from ..evaluators._gold import GoldCase, GoldJudge, gold_case

    try:
        gj = GoldJudge(str(criteria), single_call=single_call, judge_pass_only=judge_pass_only,
                       system_under_test=system_model)
    except ValueError as exc:
        raise UserError(f"grade_gold: {exc}") from None
    if isinstance(cases, Sequence) and cases and all(isinstance(c, GoldCase) for c in cases):
        gold: list[GoldCase] = list(cases)
        source = source or "gold cases"
    else:
        src, case_list, n_dup = unique_cases(cases)
        try:
            gold = [gold_case(c) for c in case_list]
        except ValueError as exc:
            raise UserError(f"{src}: {exc}") from None
        source, skipped = source or src, skipped + n_dup
    docs = [[c.id, text_sha256(c.generated), text_sha256(c.gold)] for c in gold]
    as_cases = [Case(id=c.id, data={"id": c.id, "output": c.generated, "reference": c.gold, "metadata": c.metadata})
                for c in gold]
    return await _execute(_Plan(
        "gold", "referee.grade_gold", gj, as_cases, source, text_sha256(json.dumps(docs)), items=gold,
        evaluate=gj.judge_row, on_error=_error_rows("gold", None), label="gold", skipped=skipped,
        template_path=str(criteria), others=False,
        # The documents are part of the configuration: rows graded on an earlier version of a generated or gold
        # file must not be resumed (the case id stays the same when the file is regenerated).
        config_hash=text_sha256(json.dumps({"single_call": single_call,
                                            **({"judge_pass_only": True} if judge_pass_only else {}),
                                            "documents": sorted(docs)})),
    ), judge, out=out, system_model=system_model, gates=gates, progress=progress, command=command)


grade_gold = sync_twin(
    grade_gold_async,
    """Grade generated documents against gold standards with a gold criteria file (``referee gold``'s run): one
    judge call per criterion (``single_call``: one per case), the verdict, grade and totals by the file's rules.

    Args:
        cases: gold cases (:class:`~referee.evaluators._gold.GoldCase`, as ``referee gold`` discovers them), or
            cases as for :func:`evaluate` whose ``output`` is the generated document and ``reference`` the gold
            standard.
        criteria: a gold criteria YAML file, or a shipped one by name (``gold-example-prd``).
        single_call: grade every criterion in one call per case (the documents are sent once).
        judge_pass_only: decide each criterion by the judge's pass flag alone (by default a score of 0 fails it).
        source: what the manifest names as the cases' source (default: their file, else ``gold cases``).
        skipped: cases the caller left out (counted in the manifest's totals).
        The other arguments are :func:`grade`'s.
    """,
)
