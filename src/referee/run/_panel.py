"""The run's judge when a panel judges: :func:`panel_run_judge` turns ``judge=[...]`` into the panel on the
suite's LLM evaluators (``suites.with_panel``) and the one judge the run's client, manifest and totals hang on
(the panel's first; every judge's calls count in its totals)."""

from __future__ import annotations

from typing import Any

from ..errors import UserError
from ..suites._panel import panel_members, with_panel
from ..suites._suite import Suite
from ._judge import Judge, as_judge


def panel_run_judge(suite: Suite, judge: Any, panel: dict[str, Any] | None) -> tuple[Suite, Judge | Any]:
    """(``suite`` with its panel, the run's judge). ``judge`` is a list of judges (a panel) or one judge with
    ``panel`` options over the suite's own ``judges:``."""
    if panel is not None and not isinstance(panel, dict):
        raise UserError(f"panel: expected a mapping of options, got {type(panel).__name__}")
    listed = list(judge) if isinstance(judge, list | tuple) else None
    suite = with_panel(suite, listed, **(panel or {}))
    members = panel_members(suite)
    if listed is None or not members:
        return suite, judge
    first = listed[0]
    if isinstance(first, Judge):
        return suite, first
    m = members[0]
    return suite, as_judge(Judge(m.provider, model=m.model, base_url=m.base_url, timeout=m.timeout,
                                 max_retries=m.max_retries, input_price_per_mtok=m.input_price_per_mtok,
                                 output_price_per_mtok=m.output_price_per_mtok))
