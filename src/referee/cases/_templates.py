"""Judge prompt templates: plain ``{key}`` replacement, exactly as the seed's judge runner does it.

Not ``str.format``: judge prompts contain JSON with braces. Replacement is a single pass over the template,
so a case value that itself contains ``{other}`` is inserted literally and never expanded again.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._util._image import contains_image, prompt_text
from ..errors import InputError, UserError
from ._case import Case

PLACEHOLDER_RE = re.compile(r"\{([a-zA-Z_][a-zA-Z0-9_]*)\}")


def placeholders(template: str) -> list[str]:
    """Placeholder names in order of first appearance."""
    seen: dict[str, None] = {}
    for m in PLACEHOLDER_RE.finditer(template):
        seen.setdefault(m.group(1), None)
    return list(seen)


def render_value(value: Any) -> str:
    """Strings as they are; anything else as indented JSON, non-ASCII kept readable (for display). Image parts
    become the markers a judge request puts the image at (:mod:`referee._util._image`)."""
    if isinstance(value, str):
        return value
    if contains_image(value):
        return prompt_text(value, lambda v: json.dumps(v, indent=2, ensure_ascii=False))
    return json.dumps(value, indent=2, ensure_ascii=False)


def _prompt_value(value: Any) -> str:
    """A value as the seed inserts it into a judge prompt: ``json.dumps(value, indent=2)`` exactly, so a
    prompt calibrated with the seed's runner reaches the judge byte for byte (non-ASCII escaped as it did)."""
    if isinstance(value, str):
        return value
    if contains_image(value):
        return prompt_text(value)
    return json.dumps(value, indent=2)


def transcript(turns: list[dict[str, Any]]) -> str:
    """One ``Role: content`` line per turn, role capitalised."""
    lines = []
    for t in turns:
        role = str(t.get("role", "")).strip()
        lines.append(f"{role[:1].upper()}{role[1:]}: {render_value(t.get('content', ''))}")
    return "\n".join(lines)


def case_values(case: Case) -> dict[str, Any]:
    """The values a template can use: every key of the case plus the seed's fallbacks."""
    values = {k: v for k, v in case.data.items() if v is not None}
    if "output" not in values and case.get("final_output") is not None:
        values["output"] = case.get("final_output")
    if "transcript" not in values and case.turns is not None:
        values["transcript"] = transcript(case.turns)
    return values


def fill(template: str, values: Mapping[str, Any]) -> str:
    """Replace every ``{key}`` whose key is in ``values``; others are left as written."""

    def sub(m: re.Match[str]) -> str:
        key = m.group(1)
        if key in values:
            return _prompt_value(values[key])
        return m.group(0)

    return PLACEHOLDER_RE.sub(sub, template)


def fill_case(template: str, case: Case) -> str:
    return fill(template, case_values(case))


@dataclass
class Preflight:
    """What the preflight found: the cases to run and the problems with the others."""

    valid: list[Case] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    skipped: int = 0
    missing_everywhere: list[str] = field(default_factory=list)
    """Required fields that no case has: a template typo (``{ouptut}``) rather than bad cases."""
    case_fields: list[str] = field(default_factory=list)
    """The fields the cases do have (for the message that names the typo)."""

    @property
    def ok(self) -> bool:
        return not self.problems


def preflight(cases: list[Case], required: list[str], *, label: str = "template") -> Preflight:
    """Check every case against the placeholders ``required`` and for duplicate ids (the first is kept).

    Runs before any API key is looked at, as the seed's runner does.
    """
    pf = Preflight()
    seen: dict[str, Case] = {}
    have: dict[str, None] = {}  # every field some case has, in order of first appearance
    for case in cases:
        if case.id in seen:
            pf.problems.append(
                f"{case.where}: duplicate id '{case.id}' (first at {seen[case.id].where}); the first is kept"
            )
            pf.skipped += 1
            continue
        seen[case.id] = case
        values = case_values(case)
        have.update(dict.fromkeys(values))
        miss = [k for k in required if k not in values]
        if miss:
            pf.problems.append(
                f"{case.where}: case '{case.id}' is missing field(s) {', '.join(miss)} used by the {label}"
            )
            pf.skipped += 1
            continue
        pf.valid.append(case)
    if seen:
        pf.missing_everywhere = [k for k in required if k not in have]
        pf.case_fields = list(have)
    return pf


class NoValidCases(UserError):
    """``--skip-invalid`` left no case to run: exit 1 (nothing was graded), as the seed's runners."""

    exit_code = 1


def with_line_problems(pf: Preflight, problems: list[str]) -> Preflight:
    """``pf`` with the lines the loader left out (``--skip-invalid``) counted as invalid cases, first."""
    if problems:
        pf.problems[:0] = problems
        pf.skipped += len(problems)
    return pf


def require_valid(pf: Preflight, cases_path: str | Path, *, skip_invalid: bool, verb: str = "judge",
                  on_problem: Callable[[str], None] | None = None) -> None:
    """The seed's preflight outcome: each problem to ``on_problem``, then a :class:`UserError` unless
    ``skip_invalid`` (the invalid cases are then left out). A field that no case has is a template typo, not
    bad cases: one error naming it, whatever ``skip_invalid`` says."""
    if pf.missing_everywhere:
        names = ", ".join("{" + k + "}" for k in pf.missing_everywhere)
        raise UserError(f"no case in {cases_path} has {names}; fix the template or the cases "
                        f"(the cases have: {', '.join(pf.case_fields)})")
    if on_problem is not None:
        for problem in pf.problems:
            on_problem(problem)
    if not pf.ok and not skip_invalid:
        raise UserError(f"{len(pf.problems)} invalid case(s) in {cases_path}; fix them or pass --skip-invalid")
    if not pf.ok:
        # The seed's line, word for word: scripts and CI logs look for it.
        logging.getLogger("referee").info("--skip-invalid: continuing with %d/%d valid case(s).", len(pf.valid),
                                          len(pf.valid) + pf.skipped)
    if not pf.valid:
        raise NoValidCases(f"no valid cases to {verb} in {cases_path}")

def read_template(path: str | Path) -> str:
    """A template file's text; :class:`InputError` naming the file when it is missing or not UTF-8."""
    p = Path(path)
    if not p.exists():
        raise InputError("template file not found", file=str(path))
    try:
        return p.read_text(encoding="utf-8-sig")  # a BOM from a Windows editor is not prompt text
    except UnicodeDecodeError as exc:
        raise InputError("template is not valid UTF-8", file=str(path)) from exc
