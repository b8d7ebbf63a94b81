"""Running a suite: every evaluator on every case, one row per case in the common result schema.

Checks run inline (they are microseconds each), sandboxed code checks in worker threads (bounded by the
number of cores), LLM evaluators through the judge client (cache, retries, the reply contract). Per-evaluator
results become the row's ``criteria``; the case score combines them as the suite's ``scoring`` says.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import os
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._cases import Case
from ..evaluators._base import CheckResult, Evaluator, JudgeSettings, LLMEvaluator, result_row
from ..results._check import SUITE_EVALUATOR
from ..results._manifest import RunManifest, text_sha256
from ..results._schema import JudgeInfo, ResultRow, Usage
from ..runner._session import Outcome, error_row, execute
from ._loader import EvalSpec, Suite

if TYPE_CHECKING:
    from ..engines import Engine

EVALUATOR_LABEL = SUITE_EVALUATOR


def _safe_check(spec: EvalSpec, case: Case, output: Any) -> CheckResult:
    try:
        res = spec.evaluator.evaluate(case, output)
    except Exception as exc:  # noqa: BLE001 - a check that raises is an error row, never a stopped run
        return CheckResult.error(f"raised {type(exc).__name__}: {exc}")
    return _checked(spec, res)


def _checked(spec: EvalSpec, res: Any) -> CheckResult:
    if not isinstance(res, CheckResult):
        return CheckResult.error(f"{spec.label} returned {type(res).__name__}, not a CheckResult")
    if res.status == "scored" and (res.score is None or not 0.0 <= res.score <= 1.0 or res.score != res.score):
        return CheckResult.error(f"{spec.label} returned score {res.score!r}; scores are 0-1")
    return res


def _has_async(spec: EvalSpec) -> bool:
    """Whether the evaluator has its own ``evaluate_async`` (function plugins, judges)."""
    return type(spec.evaluator).evaluate_async is not Evaluator.evaluate_async


def _output_of(case: Case, spec: EvalSpec) -> Any:
    return case.output if spec.field == "output" else case.get(spec.field)


@dataclass
class CaseEvaluator:
    """Evaluates one case with every spec of a suite and combines the results into one row."""

    suite: Suite
    code_slots: asyncio.Semaphore | None = None
    _fast: bool = field(init=False, default=True)

    def __post_init__(self) -> None:
        self._fast = not any(s.is_llm or s.blocking or _has_async(s) for s in self.suite.specs)

    async def evaluate(self, case: Case) -> ResultRow:
        t0 = time.perf_counter()
        if self._fast:
            results = [_safe_check(s, case, _output_of(case, s)) for s in self.suite.specs]
        else:
            results = list(await asyncio.gather(*(self._one(s, case) for s in self.suite.specs)))
        return combine(self.suite, case, results, (time.perf_counter() - t0) * 1000)

    async def _one(self, spec: EvalSpec, case: Case) -> CheckResult:
        output = _output_of(case, spec)
        if spec.is_llm:
            try:
                return _checked(spec, await spec.evaluator.evaluate_async(case, output))
            except Exception as exc:  # noqa: BLE001
                from ..runner._engine import is_fatal

                if is_fatal(exc):
                    raise  # a bad key or unknown model repeats for every case: stop the run
                return CheckResult.error(f"{spec.label}: {type(exc).__name__}: {exc}")
        if spec.blocking:
            if self.code_slots is None:  # made once, so every case shares the same bound
                self.code_slots = asyncio.Semaphore(os.cpu_count() or 2)
            async with self.code_slots:
                return await asyncio.to_thread(_safe_check, spec, case, output)
        if _has_async(spec):
            try:
                return _checked(spec, await spec.evaluator.evaluate_async(case, output))
            except Exception as exc:  # noqa: BLE001
                return CheckResult.error(f"raised {type(exc).__name__}: {exc}")
        return _safe_check(spec, case, output)


def _passed(spec: EvalSpec, r: CheckResult, default_threshold: float) -> bool | None:
    if r.status != "scored" or r.score is None:
        return None
    if spec.threshold is not None:
        return r.score >= spec.threshold
    if r.passed is not None:
        return r.passed
    return r.score >= default_threshold


def combine(suite: Suite, case: Case, results: Sequence[CheckResult], latency_ms: float) -> ResultRow:
    """One row from one case's evaluator results: with one evaluator, that evaluator's own row (the command's
    row: its name as ``evaluator``, its criteria, winner, flags and details); with several, the combined row
    (the suite's scoring rule; each evaluator one of its ``criteria``, its details under
    ``details["checks"][label]``, its typed result at ``row.check(label)``)."""
    if len(results) == 1:
        return own_row(suite, case, suite.specs[0], results[0], latency_ms)
    sc = suite.scoring
    criteria: list[dict[str, Any]] = []
    usage: Usage | None = None
    cost: float | None = None
    judge: JudgeInfo | None = None
    raw_reply: str | None = None
    details: dict[str, Any] = {}
    bad: list[str] = []
    statuses = set()
    wsum = wtot = usum = 0.0
    nscored = 0
    all_pass = True
    lowest = 1.0
    critical_failed: list[str] = []
    for spec, r in zip(suite.specs, results, strict=True):
        statuses.add(r.status)
        passed = _passed(spec, r, sc.threshold)
        if r.usage is not None:
            usage = r.usage if usage is None else usage + r.usage
        if r.cost_usd is not None:
            cost = (cost or 0.0) + r.cost_usd
        judge = r.judge or judge
        raw_reply = r.raw_reply or raw_reply
        kept = _kept_details(r)
        if kept:
            details[spec.label] = kept
        reason = r.reason if r.status == "scored" else r.problem
        # Plain dicts with only the keys that differ from the defaults: validating the whole row once is
        # twice as fast as building each CriterionScore (this loop runs 500,000 times in the benchmark).
        crit: dict[str, Any] = {"id": spec.label}
        if spec.name != spec.label:
            crit["name"] = spec.name
        if r.status != "scored":
            crit["status"] = r.status
        else:
            crit["score"] = r.score
        if passed is not None:
            crit["passed"] = passed
        if spec.weight != 1.0:
            crit["weight"] = spec.weight
        if spec.critical:
            crit["critical"] = True
        if reason:
            crit["rationale"] = reason
        if r.evidence:
            crit["evidence"] = [str(e) for e in r.evidence[:5]]
        if r.status == "error":
            crit["error"] = reason
        criteria.append(crit)
        if r.status != "scored":
            bad.append(f"{spec.label} {r.status}: {reason}")
            continue
        assert r.score is not None
        wsum += spec.weight * r.score
        wtot += spec.weight
        usum += r.score
        nscored += 1
        lowest = min(lowest, r.score)
        if not passed:
            all_pass = False
            bad.append(f"{spec.label}: {reason}" if reason else f"{spec.label} failed")
            if spec.critical:
                critical_failed.append(spec.label)
    common: dict[str, Any] = {
        "id": case.id, "category": case.category, "evaluator": EVALUATOR_LABEL, "criteria": criteria,
        "latency_ms": round(latency_ms, 3),
    }
    if judge is not None:
        common["judge"] = judge
    if usage is not None:
        common["usage"] = usage
    if cost is not None:
        common["cost_usd"] = cost
    meta = case.metadata
    if meta:
        common["metadata"] = meta
    if details:
        common["details"] = {"checks": details}
    if "error" in statuses or "unscored" in statuses:
        status: Literal["error", "unscored"] = "error" if "error" in statuses else "unscored"
        return ResultRow.model_validate({
            **common, "status": status, "error": "; ".join(b for b in bad if f" {status}: " in b)[:1000],
            "rationale": "; ".join(bad)[:1000] or None, "raw_reply": raw_reply})
    if sc.mode == "all_pass":
        score = 1.0 if all_pass else 0.0
    elif sc.mode == "min":
        score = lowest
    else:
        score = wsum / wtot if wtot > 0 else usum / max(1, nscored)  # all weights 0: plain mean
    flags: list[str] = []
    if critical_failed:
        score = 0.0
        flags.append("critical_failed")
    score = min(1.0, max(0.0, score))
    ok = score >= sc.threshold and not critical_failed
    rationale = "; ".join(bad[:3]) if bad else f"all {len(criteria)} evaluators passed"
    if flags:
        common["flags"] = flags
    return ResultRow.model_validate({**common, "status": "scored", "score": round(score, 6), "passed": ok,
                                     "rationale": rationale[:1000]})


def _kept_details(r: CheckResult) -> dict[str, Any]:
    """What a combined row keeps of one evaluator's result beyond its criterion entry: its details, its own
    criteria and its winner (read back typed by ``row.check(label)``)."""
    if not (r.criteria or r.winner is not None or r.position_bias_detected is not None):
        return r.details
    kept: dict[str, Any] = {}
    if r.criteria:
        kept["criteria"] = [c.model_dump(mode="json", exclude_defaults=True) for c in r.criteria]
    kept.update(r.details)
    if r.winner is not None or r.position_bias_detected is not None:
        kept.update(winner=r.winner, position_bias_detected=r.position_bias_detected)
    return kept


def own_row(suite: Suite, case: Case, spec: EvalSpec, r: CheckResult, latency_ms: float) -> ResultRow:
    """The row of a suite with one evaluator: the evaluator's own row (:func:`result_row`, as its command writes
    it), under the suite's rules where they decide more than the evaluator did: an entry's ``threshold`` sets
    ``passed``, ``all_pass`` scoring makes the score 1 or 0, and a failed ``critical`` entry scores 0."""
    label = spec.evaluator.row_evaluator if spec.label == spec.name else spec.label
    if r.status == "scored" and r.score is not None and (
            spec.threshold is not None or spec.critical or suite.scoring.mode == "all_pass"):
        passed = _passed(spec, r, suite.scoring.threshold)
        r = dataclasses.replace(r, passed=passed)
        if suite.scoring.mode == "all_pass":
            r.score = 1.0 if passed else 0.0
        if spec.critical and not passed:
            r.score = 0.0
            r.flags = [*r.flags, "critical_failed"]
    return result_row(case, r, evaluator=label, category=getattr(spec.evaluator, "category", None),
                      latency_ms=latency_ms)


def bind_settings(suite: Suite, settings: Any) -> Suite:
    """A copy of ``suite`` whose LLM evaluators are bound to ``settings`` (a ``JudgeSettings``): the judge
    settings are passed explicitly, and each evaluator is copied so binding never leaks between runs."""
    specs = []
    for s in suite.specs:
        if isinstance(s.evaluator, LLMEvaluator):
            ev = dataclasses.replace(s.evaluator)
            ev.bind(settings)
            s = dataclasses.replace(s, evaluator=ev)
        specs.append(s)
    return dataclasses.replace(suite, specs=specs)


def build_manifest(suite: Suite, *, command: list[str], judge_config: Any = None,
                   system_model: str | None = None) -> RunManifest:
    src = suite.cases_path or suite.path
    m = RunManifest.for_cases("suite", src, [c.id for c in suite.cases], command=command,
                              sha256=None if Path(src).is_file() else suite.sha256, judge=judge_config,
                              system_under_test=system_model)
    # Red-team cases (generated with metadata.adversarial) must never blend into correctness numbers: a suite of
    # them is marked adversarial so `referee score` reports it per attack type.
    m.adversarial = bool(suite.cases) and all(c.metadata.get("adversarial") is True for c in suite.cases)
    # Rows are reused on a rerun only when the suite, its evaluators and the cases' content are the same.
    m.extra["config_hash"] = text_sha256(suite.config_hash() + (m.eval_set.sha256 if m.eval_set else ""))
    m.extra["suite"] = {"path": suite.path, "name": suite.name, "sha256": suite.sha256,
                        "evaluators": [s.label for s in suite.specs], "scoring": suite.scoring.model_dump(),
                        "llm_evaluators": [s.label for s in suite.llm_specs]}
    if suite.llm_specs:
        hashes = sorted({getattr(s.evaluator, "template_hash", "") for s in suite.llm_specs})
        m.extra["judge_template_sha256"] = text_sha256("\n".join(hashes))
    return m


def run_suite(suite: Suite, out: Path, *, client: Any = None, concurrency: int = 8,
              command: list[str] | None = None, judge_config: Any = None,
              system_model: str | None = None, engine: Engine | str | None = None) -> Outcome:
    """Run ``suite`` writing rows to ``out`` (resuming a crashed identical run) and the manifest beside it.

    ``engine`` says where cases are evaluated (``local``, the default, or ``ray[=ADDRESS]``; see
    :mod:`referee.engines`); rows come back here to the one writer either way.
    """
    from ..engines import get_engine

    manifest = build_manifest(suite, command=command or ["referee", *sys.argv[1:]], judge_config=judge_config,
                              system_model=system_model)
    eng = get_engine(engine)
    with collector_tuned(checks_only=not any(s.is_llm or s.blocking for s in suite.specs)), \
            eng.start(suite, client=client, concurrency=concurrency) as run:
        return execute(
            out=out, manifest=manifest, items=suite.cases, key=lambda c: (c.id, None, None),
            evaluate=run.evaluate,
            on_error=lambda c, exc: error_row(c.id, exc, evaluator=EVALUATOR_LABEL, category=c.category),
            client=client, concurrency=run.concurrency, label="evaluating",
        )


@contextlib.contextmanager
def collector_tuned(*, checks_only: bool) -> Iterator[None]:
    """The garbage collector for the length of a run. Rows are small, short-lived and acyclic, but the collector
    rescans every live case and row on each pass: freezing what is loaded and collecting less often halves the
    time of a large checks-only run (and saves ~10% of the CPU of a judged one). A checks-only run creates no
    reference cycles worth collecting, so the collector is paused for it."""
    old = gc.get_threshold()
    was_enabled = gc.isenabled()
    gc.freeze()
    gc.set_threshold(max(old[0], 50_000), old[1], max(old[2], 1_000))
    if checks_only:
        gc.disable()
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()
        if was_enabled:
            gc.enable()


@dataclass
class DryRun:
    calls: int
    cases: int
    llm_evaluators: list[str]
    input_tokens: int
    max_output_tokens: int
    cost_usd: float | None

    def describe(self, prices_known: bool) -> str:
        times = "x" if self.calls == self.cases * len(self.llm_evaluators) else "with"  # gold, pairwise: more
        lines = [f"dry run: {self.cases} case(s) {times} {len(self.llm_evaluators)} LLM evaluator(s) "
                 f"({', '.join(self.llm_evaluators) or 'none'}) = {self.calls} judge call(s); no call was made"]
        if times == "with":
            lines.append("  (gold makes one call per criterion unless single_call; pairwise two, one per order)")
        if self.calls:
            lines.append(f"  estimated input ~{self.input_tokens:,} tokens (4 characters per token), output at "
                         f"most {self.max_output_tokens:,} tokens (max_tokens per call)")
            if prices_known and self.cost_usd is not None:
                lines.append(f"  estimated cost at most ${self.cost_usd:.4f} (before cache hits and retries)")
            else:
                lines.append("  cost unknown: give --input-price-per-mtok and --output-price-per-mtok (or "
                             "judge.input_price_per_mtok / output_price_per_mtok in the suite)")
        return "\n".join(lines)


def dry_run(suite: Suite, *, max_tokens: int, input_price: float | None, output_price: float | None) -> DryRun:
    """Count judge calls and estimate tokens/cost from the filled prompts, without any provider."""
    specs = suite.llm_specs
    chars = 0
    out_tokens = 0
    calls = 0
    for s in specs:
        ev = s.evaluator
        if isinstance(ev, LLMEvaluator) and ev.settings is None:
            ev = dataclasses.replace(ev)
            ev.bind(JudgeSettings(client=None, max_tokens=max_tokens))
        for c in suite.cases:
            try:  # gold makes one call per criterion, pairwise one per order
                reqs = ev.call_requests(c, _output_of(c, s)) if isinstance(ev, LLMEvaluator) else None
            except NotImplementedError:
                reqs = None
            if reqs is None:
                calls += 1
                out_tokens += max_tokens
                continue
            calls += len(reqs)
            for req in reqs:
                chars += sum(len(m.content) for m in req.messages)
                out_tokens += req.max_tokens
    in_tokens = chars // 4
    cost = None
    if input_price is not None and output_price is not None:
        cost = in_tokens / 1e6 * input_price + out_tokens / 1e6 * output_price
    return DryRun(calls=calls, cases=len(suite.cases),
                  llm_evaluators=[s.label for s in specs], input_tokens=in_tokens, max_output_tokens=out_tokens,
                  cost_usd=cost)
