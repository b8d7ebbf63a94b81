"""HANNA (Chhun et al. 2022/2024): human 1-5 story ratings beside recorded LLM-judge ratings.

``hanna_metric_scores_llm.csv`` has one row per story source (``Human`` plus 10 generation systems) and one
column per rating family; each cell is a JSON list of 96 floats (one per prompt). This module computes, with
no model call, the correlation of each judge column with the mean of the 3 human raters (story level and
system level) and the leave-one-out human ceiling (each rater against the mean of the other two).
"""

from __future__ import annotations

import csv
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError
from ..stats._agreement import correlation, correlation_ci
from ..stats._bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, Interval

CRITERIA = {"RE": "Relevance", "CH": "Coherence", "EM": "Empathy", "SU": "Surprise", "EG": "Engagement",
            "CX": "Complexity"}
JUDGES = ("Beluga-13B", "Mistral-7B", "Llama-13B", "ChatGPT")
HUMAN_ROW = "Human"


@dataclass
class HannaTable:
    """Column name -> ratings of the generated stories (Human row excluded), plus the system of each story."""

    columns: dict[str, NDArray[np.float64]]
    systems: list[str]
    """System name of each story, aligned with the column arrays."""
    human_columns: dict[str, NDArray[np.float64]] = field(default_factory=dict)
    """The same columns for the 96 human-written stories (not used in correlations, kept for reference)."""

    def column(self, name: str) -> NDArray[np.float64]:
        if name not in self.columns:
            raise InputError(f"column '{name}' not in the HANNA table")
        return self.columns[name]


def read_hanna(path: str | Path, *, columns: list[str] | None = None) -> HannaTable:
    """Read the score table. ``columns`` limits parsing to the columns needed (the file has 255)."""
    p = Path(path)
    if not p.exists():
        raise InputError("file not found", file=str(p))
    csv.field_size_limit(sys.maxsize)
    with open(p, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if not rows or rows[0][0] != "Model":
        raise InputError("expected a 'Model' column first (hanna_metric_scores_llm.csv)", file=str(p), line=1)
    header = rows[0]
    wanted = [i for i, h in enumerate(header) if i > 0 and (columns is None or h in columns)]
    gen: dict[str, list[float]] = {header[i]: [] for i in wanted}
    human: dict[str, list[float]] = {header[i]: [] for i in wanted}
    systems: list[str] = []
    for lineno, row in enumerate(rows[1:], 2):
        if not row:  # a blank line
            continue
        name = row[0]
        target = human if name == HUMAN_ROW else gen
        n = None
        for i in wanted:
            try:
                values = json.loads(row[i])
                if not isinstance(values, list):
                    raise TypeError("not a list")
                nums = [float(v) for v in values]  # a string or object inside fails here, not later
            except (IndexError, TypeError, ValueError) as exc:  # JSONDecodeError is a ValueError
                raise InputError("cell is not a JSON list of numbers", file=str(p), line=lineno,
                                 field=header[i]) from exc
            if n is not None and len(nums) != n:
                raise InputError(f"{len(nums)} values where other columns have {n}", file=str(p),
                                 line=lineno, field=header[i])
            n = len(nums)
            target[header[i]].extend(nums)
        if name != HUMAN_ROW and n is not None:
            systems.extend([name] * n)
    return HannaTable({k: np.asarray(v) for k, v in gen.items()}, systems,
                      {k: np.asarray(v) for k, v in human.items()})


def needed_columns(judges: tuple[str, ...] = JUDGES, prompts: tuple[int, ...] = (1, 2, 3, 4)) -> list[str]:
    cols = list(CRITERIA.values())
    for code in CRITERIA:
        for r in (1, 2, 3):
            cols += [f"Human {r} {code}", f"Human Avg {r} {code}"]
        for j in judges:
            cols += [f"{j} {code} {p}" for p in prompts]
    return cols


def story_level(table: HannaTable, judge: str, prompt: int, code: str, *, ci: bool = False,
                n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED) -> Interval:
    """Kendall tau-b of one judge column against the human mean over all generated stories."""
    x = table.column(f"{judge} {code} {prompt}")
    y = table.column(CRITERIA[code])
    if ci:
        return correlation_ci(x, y, "kendall", n_boot=n_boot, seed=seed)
    return Interval(correlation(x, y, "kendall"), None, None, int(x.size), method="point estimate")


def human_ceiling(table: HannaTable, code: str) -> float:
    """Leave-one-out human ceiling: Kendall tau-b of each rater against the mean of the other two, averaged."""
    taus = [correlation(table.column(f"Human {r} {code}"), table.column(f"Human Avg {r} {code}"), "kendall")
            for r in (1, 2, 3)]
    return float(np.mean(taus))


def system_level(table: HannaTable, judge: str, prompt: int, code: str) -> float:
    """Kendall tau-b between per-system means of the judge and of the humans (10 systems)."""
    names = list(dict.fromkeys(table.systems))
    sys_arr = np.asarray(table.systems)
    x = table.column(f"{judge} {code} {prompt}")
    y = table.column(CRITERIA[code])
    jm = [float(x[sys_arr == s].mean()) for s in names]
    hm = [float(y[sys_arr == s].mean()) for s in names]
    return correlation(jm, hm, "kendall")


def report(table: HannaTable, *, judges: tuple[str, ...] = JUDGES, prompts: tuple[int, ...] = (1,),
           ci: bool = False, n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """Story-level and system-level tau per judge/prompt/criterion, and the human leave-one-out ceiling."""
    out: dict[str, Any] = {
        "n_stories": len(table.systems), "n_systems": len(set(table.systems)),
        "human_leave_one_out": {code: human_ceiling(table, code) for code in CRITERIA},
        "story_level": {}, "system_level": {},
    }
    for j in judges:
        for p in prompts:
            key = f"{j} prompt{p}"
            out["story_level"][key] = {}
            for code in CRITERIA:
                iv = story_level(table, j, p, code, ci=ci, n_boot=n_boot, seed=seed)
                out["story_level"][key][code] = {"tau_b": iv.estimate, "lo": iv.lo, "hi": iv.hi}
            out["system_level"][key] = {code: system_level(table, j, p, code) for code in CRITERIA}
    return out


def hanna_meta(path: str | Path, *, judges: tuple[str, ...] = JUDGES, prompts: tuple[int, ...] = (1,),
               ci: bool = False, n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """:func:`report` of the HANNA CSV at ``path``, reading only the columns it needs."""
    table = read_hanna(path, columns=needed_columns(judges, prompts))
    return report(table, judges=judges, prompts=prompts, ci=ci, n_boot=n_boot, seed=seed)
