"""What running a suite would generate, judge and cost, with no call made (``referee run --dry-run``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._suite import DryRun
    from ._targets import GenerationEstimate


@dataclass
class RunEstimate:
    """The estimate of one run: per-target generation (empty without targets), the judge calls, the prices used
    and where they came from (``"your prices"`` or the price database's version), and ``lines``, the report
    ``referee run --dry-run`` prints (each item one ``echo``: it may span lines)."""

    generation: list[GenerationEstimate]
    judge: DryRun
    input_price: float | None
    output_price: float | None
    price_source: str
    lines: list[str]

    def describe(self) -> str:
        return "\n".join(self.lines)


def estimate_run(suite: Any, *, provider: str, model: str | None = None, base_url: str | None = None,
                 max_tokens: int = 1024, input_price: float | None = None, output_price: float | None = None,
                 batch: bool = False, repeat: int = 1) -> RunEstimate:
    """Estimate a run of ``suite`` (a loaded :class:`~referee.suites.Suite`; load it with ``run_user_code=False`` to
    import no plugin module) without calling anything: the generations of its targets and their cost, then the
    judge calls (once per case and target, ``repeat`` times) and their cost. The judge's prices are yours when both are given
    (at the batch rate with ``batch``), else the public price database's for ``provider``/``model``."""
    from ..evaluators._panel import PanelEvaluator
    from ._suite import dry_run

    lines: list[str] = []
    gens: list[GenerationEstimate] = []
    if suite.targets:
        from ._targets import estimate_generation

        lines.append(f"generation: {len(suite.cases)} case(s) x {len(suite.targets)} target(s) "
                     f"({', '.join(t.id for t in suite.targets)}) = {len(suite.cases) * len(suite.targets)} "
                     "generation(s), before the cache and earlier outputs; tool loops make more model calls")
        gens = estimate_generation(suite.targets, suite.cases, suite.base_dir, batch=batch)
        lines.append("generation estimate (no call was made):")
        lines.extend(g.describe() for g in gens)
        priced = [g.cost_usd for g in gens if g.cost_usd is not None]
        if priced:
            unpriced = len(gens) - len(priced)
            lines.append(f"  estimated generation cost at most ${sum(priced):.4f} (before cache hits and retries"
                         + (f"; {unpriced} target(s) without a price not included)" if unpriced else ")"))
        suite = dataclasses.replace(suite, cases=suite.cases * len(suite.targets))
    if repeat > 1:  # each repeat judges every case again (with the cache bypassed)
        lines.append(f"repeats: every case judged {repeat} times")
        suite = dataclasses.replace(suite, cases=suite.cases * repeat)
    ip, op = input_price, output_price
    source = "your prices"
    if ip is not None and op is not None and batch:
        from ..runner._prices import BATCH_DISCOUNT

        ip, op = ip * BATCH_DISCOUNT, op * BATCH_DISCOUNT
    elif ip is None or op is None:
        from ..runner._prices import database_version, per_mtok

        db = per_mtok(provider, model, base_url=base_url, batch=batch)
        if db is not None:
            (ip, op), source = db, str(database_version())
    if model is None:  # images are counted by the model's rule: the provider's default one
        from ..providers import provider_class

        model = provider_class(provider).default_model or None
    est = dry_run(suite, max_tokens=max_tokens, input_price=ip, output_price=op, provider=provider, model=model)
    lines.append(f"{suite.name}: {len(suite.cases)} case(s), {len(suite.specs)} evaluator(s): "
                 f"{', '.join(s.label for s in suite.specs)}")
    lines.append(est.describe(ip is not None and op is not None))
    if ip is not None and op is not None and est.calls:
        lines.append(f"  prices: {source}, ${ip:g} / ${op:g} per million input / output tokens"
                     + (" (batch rate)" if batch else ""))
    panels = [s.label for s in suite.llm_specs if isinstance(s.evaluator, PanelEvaluator)]
    if panels:
        lines.append(f"  a panel judges {', '.join(panels)}: one call per judge, counted above at the run judge's "
                     "prices; calls to a stronger judge for escalated cases depend on the verdicts and are not "
                     "counted")
    return RunEstimate(generation=gens, judge=est, input_price=ip, output_price=op, price_source=source,
                       lines=lines)
