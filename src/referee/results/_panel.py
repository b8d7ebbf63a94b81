"""The panel record of a row: what each judge of a panel said about one case, and how the panel combined it.

A panel-judged evaluator's row keeps it in ``details["panel"]`` (in a suite's combined row, in
``details["checks"][label]["panel"]``), with this schema:

- ``rule``: ``majority``, ``mean``, ``median``, ``min``, ``all_pass`` or ``weighted``;
- ``quorum``: judges that had to grade for a verdict; ``graded``: how many did;
- ``tie``: the tie rule (``unscored``, ``strict``, ``first``); ``tied``: whether this case's vote was tied;
- ``agreement``: the share of the graded judges whose vote matches the panel's (None when unscored);
- ``members``: one entry per judge, in the panel's order: ``judge`` (``provider:model``), ``status``, ``score``,
  ``passed``, ``winner``, ``reason`` (at most 500 characters), ``error``, ``cost_usd``, ``latency_ms``,
  ``input_tokens``, ``output_tokens``, ``cached`` and ``weight``;
- ``escalated``: the stronger judge's entry (same fields) when the case went to one; ``needs_human``: the case
  was below the escalation threshold and has no verdict (the row is unscored, flagged ``needs_human``).

The row's own ``usage`` and ``cost_usd`` are the sums over the judges, so totals count every judge.
:func:`panel_of` reads the record back typed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._schema import ResultRow

REASON_CHARS = 500


@dataclass
class PanelVote:
    """One judge's result on one case, as the panel record keeps it."""

    judge: str
    status: str
    score: float | None = None
    passed: bool | None = None
    winner: str | None = None
    reason: str = ""
    error: str | None = None
    cost_usd: float | None = None
    latency_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached: bool = False
    weight: float = 1.0

    @property
    def vote(self) -> str | None:
        """The categorical vote: the pairwise winner, else ``"pass"``/``"fail"``; None when not graded."""
        if self.status != "scored":
            return None
        if self.winner is not None:
            return self.winner
        if self.passed is None:
            return None
        return "pass" if self.passed else "fail"


@dataclass
class PanelRecord:
    """How a panel judged one case (``details["panel"]``; schema in the module text)."""

    rule: str
    quorum: int
    tie: str
    graded: int
    tied: bool = False
    agreement: float | None = None
    members: list[PanelVote] = field(default_factory=list)
    escalated: PanelVote | None = None
    """The stronger judge's result, when the case was escalated to one."""
    needs_human: bool = False
    """The case was below the escalation threshold with no stronger judge (or that judge could not grade)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PanelRecord:
        known = set(PanelVote.__dataclass_fields__)
        members = [PanelVote(**{k: v for k, v in m.items() if k in known}) for m in d.get("members") or []
                   if isinstance(m, Mapping)]
        esc = d.get("escalated")
        return cls(rule=str(d.get("rule", "")), quorum=int(d.get("quorum", 0)), tie=str(d.get("tie", "")),
                   graded=int(d.get("graded", 0)), tied=bool(d.get("tied", False)), agreement=d.get("agreement"),
                   members=members,
                   escalated=PanelVote(**{k: v for k, v in esc.items() if k in known}) if isinstance(esc, Mapping)
                   else None, needs_human=bool(d.get("needs_human", False)))


def panel_of(row: ResultRow, label: str | None = None) -> PanelRecord | None:
    """The panel record of ``row`` (of its evaluator ``label`` in a suite's combined row; without a label, the
    row's own, else the first evaluator's that has one); None when no panel judged it."""
    details = row.details or {}
    if label is None and isinstance(details.get("panel"), Mapping):
        return PanelRecord.from_dict(details["panel"])
    checks = details.get("checks")
    if isinstance(checks, Mapping):
        for name, d in checks.items():
            if (label is None or name == label) and isinstance(d, Mapping) and isinstance(d.get("panel"), Mapping):
                return PanelRecord.from_dict(d["panel"])
    return None
