"""Running a suite: every evaluator on every case, one row per case in the common result schema.

Checks run inline (they are microseconds each), sandboxed code checks in worker threads (bounded by the
number of cores), LLM evaluators through the judge client (cache, retries, the reply contract). Per-evaluator
results become the row's ``criteria``; the case score combines them as the suite's ``scoring`` says.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..evaluators._base import JudgeSettings, LLMEvaluator
from ..evaluators._panel import PanelEvaluator
from ..results._manifest import RunManifest, text_sha256
from ..runner._session import Outcome, error_row, execute
from ..suites._loader import Suite
from ._case import EVALUATOR_LABEL, _output_of

if TYPE_CHECKING:
    from .engines import Engine

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
    panels = {s.label: {"judges": [m.label for m in s.evaluator.members], "rule": s.evaluator.rule,
                        "quorum": s.evaluator.needed, "tie": s.evaluator.tie}
              for s in suite.llm_specs if isinstance(s.evaluator, PanelEvaluator)}
    if panels:
        m.extra["panel"] = panels
    if suite.llm_specs:
        hashes = sorted({getattr(s.evaluator, "template_hash", "") for s in suite.llm_specs})
        m.extra["judge_template_sha256"] = text_sha256("\n".join(hashes))
    return m


def run_suite(suite: Suite, out: Path, *, client: Any = None, concurrency: int = 8,
              command: list[str] | None = None, judge_config: Any = None,
              system_model: str | None = None, engine: Engine | str | None = None) -> Outcome:
    """Run ``suite`` writing rows to ``out`` (resuming a crashed identical run) and the manifest beside it.

    ``engine`` says where cases are evaluated (``local``, the default, or ``ray[=ADDRESS]``; see
    :mod:`referee.run.engines`); rows come back here to the one writer either way.
    """
    from .engines import get_engine

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
