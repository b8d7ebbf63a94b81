"""A suite in memory: its evaluator specs, cases, scoring, gates; the problems a suite file can have."""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..cases._case import Case
from ..errors import UserError
from ..evaluators._base import Evaluator
from ..targets._model import TargetSpec
from ._model import (
    Gates,
    JudgeDefaults,
    PanelJudge,
    PanelOptions,
    Scoring,
)

if TYPE_CHECKING:
    from ..alignment import AlignedJudge

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class Problem:
    """One problem in a suite file, located by file, line and YAML path (what ``referee validate`` lists)."""

    file: str
    line: int | None
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where} {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class SuiteInvalid(UserError):
    """The suite file has problems; the message lists every one, one per line."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


@dataclass
class EvalSpec:
    """One evaluator as a suite uses it."""

    label: str
    name: str
    evaluator: Evaluator
    weight: float = 1.0
    threshold: float | None = None
    critical: bool = False
    field: str = "output"
    line: int | None = None
    panel: PanelOptions | None = None
    """This entry's panel rule (``panel:``), over the suite's."""
    aligned: AlignedJudge | None = None
    """The aligned judge (``aligned:``) this LLM judge's scores are mapped through."""

    @property
    def is_llm(self) -> bool:
        return bool(getattr(self.evaluator, "is_llm", False))

    @property
    def blocking(self) -> bool:
        return bool(getattr(self.evaluator, "blocking", False))


@dataclass
class Suite:
    """A loaded suite: its cases, evaluator entries, scoring, judge defaults and gates."""

    path: str
    name: str
    cases: list[Case]
    specs: list[EvalSpec]
    scoring: Scoring = field(default_factory=lambda: Scoring())
    judge: JudgeDefaults | None = None
    gates: Gates = field(default_factory=lambda: Gates())
    concurrency: int | None = None
    sha256: str = ""
    cases_path: str | None = None
    base_dir: Path = field(default_factory=Path)
    targets: list[TargetSpec] = field(default_factory=list)
    """Systems under test (``targets:`` and the ``prompts:`` x ``models:`` matrix); empty: the cases hold the
    outputs."""
    judges: list[str | PanelJudge] = field(default_factory=list)
    """A panel (``judges:``): each LLM evaluator is judged by every one of these (see :func:`with_panel`)."""
    panel: PanelOptions | None = None

    @property
    def llm_specs(self) -> list[EvalSpec]:
        return [s for s in self.specs if s.is_llm]

    def describe(self, judge_calls: int | None = None) -> str:
        """One line of what a run of the suite does: cases, evaluators, judge calls per run (``judge_calls``:
        the dry run's count; default one per case and LLM evaluator), plugin evaluators left unimported (by
        ``validate``), targets."""
        llm = len(self.llm_specs)
        n_plugins = sum(s.evaluator.name == "not-imported" for s in self.specs)
        return (f"{len(self.cases)} case(s), {len(self.specs)} evaluator(s) ({', '.join(s.label for s in self.specs)})"
                + (f"; {llm} LLM evaluator(s): "
                   f"{llm * len(self.cases) if judge_calls is None else judge_calls} judge call(s) per run"
                   if llm else "")
                + (f"; {n_plugins} plugin evaluator(s) not imported (validate runs no user code)" if n_plugins else "")
                + (f"; {len(self.targets)} target(s): {', '.join(t.id for t in self.targets)}" if self.targets
                   else ""))

    def config_hash(self) -> str:
        """Identity of what the suite computes (for resuming only rows produced the same way)."""
        h = hashlib.sha256(self.sha256.encode())
        for s in self.specs:
            h.update(repr((s.label, s.name, s.weight, s.threshold, s.critical, s.field, s.evaluator)).encode())
        if len(self.specs) == 1:
            # One evaluator writes that evaluator's own row: never resume a file of combined rows with them.
            h.update(b"\x00own-row")
        return h.hexdigest()

    def filtered(self, patterns: list[str]) -> Suite:
        """Cases and evaluators matching ``--filter`` patterns (globs).

        ``id:GLOB``/``category:GLOB`` select cases, ``evaluator:GLOB`` selects evaluators (by label or name);
        a bare GLOB selects cases whose id or category matches. Patterns of one kind are alternatives.
        """
        case_pats: list[tuple[str, str]] = []
        ev_pats: list[str] = []
        for p in patterns:
            kind, sep, glob = p.partition(":")
            if sep and kind in ("id", "category", "case"):
                case_pats.append((kind, glob))
            elif sep and kind in ("evaluator", "eval", "check"):
                ev_pats.append(glob)
            elif sep:
                raise UserError(f"--filter {p!r}: unknown kind '{kind}' (use id:, category: or evaluator:)")
            else:
                case_pats.append(("any", p))

        def case_ok(c: Case) -> bool:
            if not case_pats:
                return True
            for kind, glob in case_pats:
                cat = c.category or ""
                if kind in ("id", "case", "any") and fnmatch.fnmatchcase(c.id, glob):
                    return True
                if kind in ("category", "any") and fnmatch.fnmatchcase(cat, glob):
                    return True
            return False

        specs = [s for s in self.specs
                 if not ev_pats or any(fnmatch.fnmatchcase(s.label, g) or fnmatch.fnmatchcase(s.name, g)
                                       for g in ev_pats)]
        cases = [c for c in self.cases if case_ok(c)]
        if not cases:
            raise UserError(f"--filter matched no case of {self.path}")
        if not specs:
            raise UserError(f"--filter matched no evaluator of {self.path}")
        return dataclasses.replace(self, cases=cases, specs=specs)
