"""Running a suite: every evaluator on every case, one row per case in the common result schema.

Checks run inline (they are microseconds each), sandboxed code checks in worker threads (bounded by the
number of cores), LLM evaluators through the judge client (cache, retries, the reply contract). Per-evaluator
results become the row's ``criteria``; the case score combines them as the suite's ``scoring`` says.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cases._media import media_sha256
from ..evaluators._base import JudgeSettings, LLMEvaluator
from ..evaluators._panel import PanelEvaluator
from ..results._files import text_sha256
from ..runner._session import Outcome, error_row, execute
from ..suites._loader import Suite
from ._case import EVALUATOR_LABEL, _output_of

if TYPE_CHECKING:
    from ..results._manifest import RunManifest
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
    from ..results._manifest import RunManifest

    src = suite.cases_path or suite.path
    m = RunManifest.for_cases("suite", src, [c.id for c in suite.cases], command=command,
                              sha256=None if Path(src).is_file() else suite.sha256, judge=judge_config,
                              system_under_test=system_model)
    # Red-team cases (generated with metadata.adversarial) must never blend into correctness numbers: a suite of
    # them is marked adversarial so `referee score` reports it per attack type.
    m.adversarial = bool(suite.cases) and all(c.metadata.get("adversarial") is True for c in suite.cases)
    # Rows are reused on a rerun only when the suite, its evaluators and the cases' content are the same.
    m.extra["config_hash"] = text_sha256(suite.config_hash() + (m.eval_set.sha256 if m.eval_set else ""))
    if (media := media_sha256(suite.cases)) is not None:
        m.extra["media_sha256"] = media
    # What the run history matches baselines on (with the suite's name and the judge): the evaluators and their
    # options, never the targets or prompts under test. Memory addresses (a function's repr) are left out.
    specs = repr([(s.label, s.name, s.weight, s.threshold, s.critical, s.field, s.evaluator, s.panel)
                  for s in suite.specs])
    m.extra["evaluators_sha256"] = text_sha256(re.sub(r" at 0x[0-9a-fA-F]+", "", specs))
    m.extra["suite"] = {"path": suite.path, "name": suite.name, "sha256": suite.sha256,
                        "evaluators": [s.label for s in suite.specs], "scoring": suite.scoring.model_dump(),
                        # the viewer's trend draws the pass-rate gate (fail_under) as a line
                        "gates": {"fail_under": suite.gates.fail_under},
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
              system_model: str | None = None, engine: Engine | str | None = None, repeat: int = 1) -> Outcome:
    """Run ``suite`` writing rows to ``out`` (resuming a crashed identical run) and the manifest beside it.

    ``engine`` says where cases are evaluated (``local``, the default, or ``ray[=ADDRESS]``; see
    :mod:`referee.run.engines`); rows come back here to the one writer either way. ``repeat`` > 1 evaluates every
    case that many times (rows ``repeat`` 0..N-1; the LLM evaluators with distinct seeds and the cache bypassed), so
    ``referee score`` reports each case's spread and its flaky cases.
    """
    from .engines import get_engine

    argv = command or ["referee", *sys.argv[1:]]

    def manifest() -> RunManifest:  # built by the runner while the first calls are in flight
        return build_manifest(suite, command=argv, judge_config=judge_config, system_model=system_model)

    eng = get_engine(engine)
    if repeat > 1:
        return _per_evaluator(_run_repeats(suite, out, manifest(), client=client, concurrency=concurrency,
                                           engine=eng, repeat=repeat), out)
    with collector_tuned(checks_only=not any(s.is_llm or s.blocking for s in suite.specs)), \
            eng.start(suite, client=client, concurrency=concurrency) as run:
        return _per_evaluator(execute(
            out=out, manifest=manifest, items=suite.cases, key=lambda c: (c.id, None, None),
            evaluate=run.evaluate,
            on_error=lambda c, exc: error_row(c.id, exc, evaluator=EVALUATOR_LABEL, category=c.category),
            client=client, concurrency=run.concurrency, label="evaluating",
        ), out)


def _per_evaluator(outcome: Outcome, out: Path) -> Outcome:
    """The manifest's ``extra["per_evaluator"]``: provider calls and tokens of each evaluator that reports its own
    share in its details (the claim metrics: ``judge_calls`` and ``judge_tokens``), summed over the rows; the manifest is
    written again with it. Nothing is added when no evaluator reports one."""
    per: dict[str, dict[str, int]] = {}
    for row in outcome.rows:
        parts = row.details.get("checks") if row.evaluator == EVALUATOR_LABEL else {row.evaluator: row.details}
        for label, d in (parts or {}).items():
            if not isinstance(d, dict) or not isinstance(d.get("judge_calls"), int):
                continue
            t = per.setdefault(label, {"calls": 0, "input_tokens": 0, "output_tokens": 0})
            t["calls"] += d["judge_calls"]
            tokens = d.get("judge_tokens") or {}
            t["input_tokens"] += int(tokens.get("input") or 0)
            t["output_tokens"] += int(tokens.get("output") or 0)
    if per:
        outcome.manifest.extra["per_evaluator"] = per
        outcome.manifest.write(out)
    return outcome


def _repeat_suite(suite: Suite, r: int) -> Suite:
    """``suite`` for sample ``r``: each LLM evaluator's seed moved by ``r`` and the cache bypassed (a repeat is a
    new sample, never the first one read back)."""
    specs = []
    for s in suite.specs:
        ev = s.evaluator
        if isinstance(ev, LLMEvaluator) and ev.settings is not None:
            st = ev.settings
            ev = ev.bound(dataclasses.replace(st, seed=(st.seed or 0) + r, use_cache=False))
            s = dataclasses.replace(s, evaluator=ev)
        specs.append(s)
    return dataclasses.replace(suite, specs=specs)


def _run_repeats(suite: Suite, out: Path, manifest: RunManifest, *, client: Any, concurrency: int, engine: Engine,
                 repeat: int) -> Outcome:
    from ..errors import UserError
    from ._case import CaseEvaluator

    if engine.name != "local":
        raise UserError(f"--repeat runs on the local engine only (not {engine.name})")
    if manifest.judge is not None:
        manifest.judge = manifest.judge.model_copy(update={"repeat": repeat})
    manifest.extra["repeat"] = repeat
    manifest.extra["config_hash"] = text_sha256(f"{manifest.extra.get('config_hash', '')}\x00repeat={repeat}")
    evaluators = [CaseEvaluator(_repeat_suite(suite, r)) for r in range(repeat)]
    items = [(c, r) for c in suite.cases for r in range(repeat)]

    async def evaluate(it: Any) -> Any:
        row = await evaluators[it[1]].evaluate(it[0])
        return row.model_copy(update={"repeat": it[1]})

    with collector_tuned(checks_only=not any(s.is_llm or s.blocking for s in suite.specs)), \
            engine.start(suite, client=client, concurrency=concurrency) as run:
        return execute(
            out=out, manifest=manifest, items=items, key=lambda it: (it[0].id, it[1], None), evaluate=evaluate,
            on_error=lambda it, exc: error_row(it[0].id, exc, evaluator=EVALUATOR_LABEL, category=it[0].category,
                                               repeat=it[1]),
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
    images: int = 0
    image_tokens: int = 0
    """Of ``input_tokens``: the images' tokens by the provider's published rule (:mod:`referee.runner._image_tokens`)."""

    def describe(self, prices_known: bool) -> str:
        times = "x" if self.calls == self.cases * len(self.llm_evaluators) else "with"  # gold, pairwise: more
        lines = [f"dry run: {self.cases} case(s) {times} {len(self.llm_evaluators)} LLM evaluator(s) "
                 f"({', '.join(self.llm_evaluators) or 'none'}) = {self.calls} judge call(s); no call was made"]
        if times == "with":
            lines.append("  (gold makes one call per criterion unless single_call; pairwise two, one per order; the claim "
                         "metrics extract and verify each text's claims once for all of them, claims estimated one "
                         "per sentence)")
        if self.calls:
            lines.append(f"  estimated input ~{self.input_tokens:,} tokens (4 characters per token), output at "
                         f"most {self.max_output_tokens:,} tokens (max_tokens per call)")
            if self.images:
                lines.append(f"  of which ~{self.image_tokens:,} tokens for {self.images} image(s) sent, by the "
                             "provider's published rule for image tokens")
            if prices_known and self.cost_usd is not None:
                lines.append(f"  estimated cost at most ${self.cost_usd:.4f} (before cache hits and retries)")
            else:
                lines.append("  cost unknown: give --input-price-per-mtok and --output-price-per-mtok (or "
                             "judge.input_price_per_mtok / output_price_per_mtok in the suite)")
        return "\n".join(lines)


def _once(seen: set[tuple[int, str]], position: int, request: Any) -> bool:
    import hashlib
    import json

    key = (position, hashlib.sha256(json.dumps(request.cache_material(), sort_keys=True, default=str).encode())
           .hexdigest())
    if key in seen:
        return False
    seen.add(key)
    return True


def dry_run(suite: Suite, *, max_tokens: int, input_price: float | None, output_price: float | None,
            provider: str = "", model: str | None = None) -> DryRun:
    """Count judge calls and estimate tokens/cost from the filled prompts, without any provider (images by
    ``provider``'s published rule)."""
    from .._util._image import strip_markers
    from ..runner._image_tokens import image_tokens

    specs = suite.llm_specs
    images = img_tokens = 0
    chars = 0
    out_tokens = 0
    calls = 0
    seen: set[tuple[int, str]] = set()
    for s in specs:
        ev = s.evaluator
        if isinstance(ev, LLMEvaluator) and ev.settings is None:
            ev = dataclasses.replace(ev)
            ev.bind(JudgeSettings(client=None, max_tokens=max_tokens))
        for i, c in enumerate(suite.cases):
            try:  # gold makes one call per criterion, pairwise one per order
                reqs = ev.call_requests(c, _output_of(c, s)) if isinstance(ev, LLMEvaluator) else None
            except NotImplementedError:
                reqs = None
            if reqs is None:
                calls += 1
                out_tokens += max_tokens
                continue
            # A request two evaluators of one case would both make is made once (the claim metrics share their
            # claim extraction and verification steps). By position, not id: with targets or repeats a case is
            # judged again (another target's output, another seed), though its prompt here looks the same.
            reqs = [r for r in reqs if _once(seen, i, r)]
            calls += len(reqs)
            for req in reqs:
                chars += sum(len(strip_markers(m.content)) for m in req.messages)
                out_tokens += req.max_tokens
                images += len(req.images)
                img_tokens += sum(image_tokens(provider, model, img) for img in req.images)
    in_tokens = chars // 4 + img_tokens
    cost = None
    if input_price is not None and output_price is not None:
        cost = in_tokens / 1e6 * input_price + out_tokens / 1e6 * output_price
    return DryRun(calls=calls, cases=len(suite.cases),
                  llm_evaluators=[s.label for s in specs], input_tokens=in_tokens, max_output_tokens=out_tokens,
                  cost_usd=cost, images=images, image_tokens=img_tokens)
