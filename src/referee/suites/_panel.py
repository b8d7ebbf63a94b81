"""A suite's judge panel: :func:`with_panel` wraps each LLM evaluator in a
:class:`~referee.evaluators._panel.PanelEvaluator` over the suite's ``judges:`` (or judges given on the command
line or in Python), with the suite's ``panel:`` rule and each entry's own ``panel:`` over it."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ..errors import UserError
from ..evaluators._base import LLMEvaluator
from ..evaluators._panel import PanelEvaluator, PanelMember, members_of
from ._model import PanelJudge, PanelOptions
from ._suite import EvalSpec, Suite


def _member(j: Any) -> Any:
    if isinstance(j, PanelJudge):
        return j.model_dump(exclude_none=True)
    return j


def _options(*layers: PanelOptions | dict[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for layer in layers:
        if layer is None:
            continue
        d = layer.model_dump(exclude_none=True) if isinstance(layer, PanelOptions) else {
            k: v for k, v in layer.items() if v is not None}
        unknown = sorted(set(d) - set(PanelOptions.model_fields))
        if unknown:
            raise UserError(f"panel: unknown option(s) {', '.join(unknown)} (known: "
                            f"{', '.join(PanelOptions.model_fields)})")
        out.update(d)
    return out


def panel_spec(spec: EvalSpec, members: tuple[PanelMember, ...], suite_panel: Any = None,
               override: dict[str, Any] | None = None) -> EvalSpec:
    """``spec`` judged by the panel ``members`` (unchanged when it is not an LLM evaluator)."""
    ev = spec.evaluator
    if not isinstance(ev, LLMEvaluator):
        return spec
    inner = ev.inner if isinstance(ev, PanelEvaluator) else ev
    opts = _options(suite_panel, spec.panel, override)
    return dataclasses.replace(spec, evaluator=PanelEvaluator(inner=inner, members=members, **opts))


def with_panel(suite: Suite, judges: Sequence[Any] | None = None, **options: Any) -> Suite:
    """``suite`` with every LLM evaluator judged by a panel: ``judges`` (default: the suite's ``judges:``;
    ``"provider:model"`` strings, mappings or :class:`referee.Judge` objects), combined by the suite's
    ``panel:`` settings, each entry's ``panel:``, then ``options`` (``rule``, ``quorum``, ``tie``,
    ``threshold``). Without judges anywhere the suite is returned as it is."""
    chosen = list(judges) if judges is not None else list(suite.judges)
    if not chosen:
        if options:
            raise UserError("panel options given without judges (judges: in the suite, --judge, judge=[...])")
        return suite
    members = members_of([_member(j) for j in chosen])
    specs = [panel_spec(s, members, suite.panel, options) for s in suite.specs]
    return dataclasses.replace(suite, specs=specs, judges=chosen)


def panel_members(suite: Suite) -> list[PanelMember]:
    """The judges of the suite's panel (empty without one), in order: the first is the run's own judge when
    none is set otherwise."""
    for s in suite.specs:
        if isinstance(s.evaluator, PanelEvaluator):
            return list(s.evaluator.members)
    return []
