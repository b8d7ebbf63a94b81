"""Recorded agent runs -> trajectory cases (``referee import``): JSON files (one run each) and JSONL files (one run
per line, optionally ``{id, input, messages|spans, ...}``), in the seed's case shape
``{id, input, trajectory: [{step, tool, args, ...}], final_output}``. A run that cannot be read is reported
(file, line, step) and skipped; the others are imported."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._util import _data
from ..errors import InputError
from ._importers import detect_format, import_trajectory
from ._model import TrajectoryError
from ._otel import otel_input


@dataclass
class ImportedRuns:
    """The cases made from recorded runs, and one line per run that was skipped (where and why)."""

    cases: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def write(self, path: str | Path) -> Path:
        """Write the cases as JSONL to ``path`` (its folder created), one case a line."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p, "w", encoding="utf-8") as fh:
            for c in self.cases:
                fh.write(json.dumps(c, ensure_ascii=False) + "\n")
        return p


def _first_user_text(data: Any, fmt: str) -> str | None:
    if fmt == "otel":
        return otel_input(data)
    msgs = data.get("messages") if isinstance(data, dict) else data
    if fmt in ("openai", "anthropic") and isinstance(msgs, list):
        for m in msgs:
            if isinstance(m, dict) and m.get("role") == "user":
                c = m.get("content")
                if isinstance(c, str):
                    return c
                if isinstance(c, list):
                    text = "".join(b.get("text", "") for b in c if isinstance(b, dict) and b.get("type") in ("text", "input_text"))
                    if text:
                        return text
    return None


_BAD = object()
"""Stands for a JSONL line that is not JSON: it is reported and skipped like any other bad run."""


def _records(path: Path) -> list[tuple[str, int | None, Any]]:
    """``(default id, line, record)``: a JSON file is one run; a JSONL file is one run per line (a line that is
    not JSON gives ``(message, line, _BAD)``)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError("not valid UTF-8", file=str(path)) from exc
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        out: list[tuple[str, int | None, Any]] = []
        for n, line in _data.jsonl_lines(text):
            try:
                out.append((f"{path.stem}-{n}", n, _data.loads(line)))
            except json.JSONDecodeError as exc:
                out.append((f"malformed JSON ({exc.msg} at column {exc.colno})", n, _BAD))
            except _data.UnsafeData as exc:
                out.append((f"refused JSON: {exc}", n, _BAD))
        return out
    try:
        return [(path.stem, None, _data.loads(text))]
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON ({exc.msg})", file=str(path), line=exc.lineno) from exc
    except _data.UnsafeData as exc:
        raise InputError(f"refused JSON: {exc}", file=str(path)) from None


def import_runs(files: Sequence[str | Path], fmt: str = "auto") -> ImportedRuns:
    """Every run of ``files`` as a trajectory case (``fmt``: ``auto`` detects the format per run)."""
    cases: list[dict[str, Any]] = []
    skipped: list[str] = []
    seen: set[str] = set()
    for f in files:
        for default_id, line, rec in _records(Path(f)):
            where = f"{f}:{line}" if line else f
            if rec is _BAD:
                skipped.append(f"{where}: {default_id}")
                continue
            meta = rec if isinstance(rec, dict) and ("messages" in rec or "spans" in rec) else {}
            data = meta.get("messages", meta.get("spans")) if meta else rec
            cid = str(meta.get("id") or default_id)
            try:
                run_fmt = fmt if fmt != "auto" else detect_format(data)
                traj = import_trajectory(data, run_fmt, case_id=cid)
            except TrajectoryError as exc:
                skipped.append(f"{where}: {exc}")
                continue
            if not traj.steps and traj.final_output is None:
                skipped.append(f"{where}: case '{cid}': empty run (no tool call and no final answer)")
                continue
            if cid in seen:
                skipped.append(f"{where}: duplicate id '{cid}'")
                continue
            seen.add(cid)
            case: dict[str, Any] = {"id": cid}
            inp = meta.get("input") if meta else None
            case["input"] = inp if inp is not None else _first_user_text(data, run_fmt)
            case["trajectory"] = traj.to_seed()
            case["final_output"] = traj.final_output
            if traj.input_tokens is not None or traj.output_tokens is not None:
                case["usage"] = {"input_tokens": traj.input_tokens, "output_tokens": traj.output_tokens}
            for key in ("category", "expect", "metadata", "reference", "final_state"):
                if meta.get(key) is not None:
                    case[key] = meta[key]
            case["metadata"] = {**case.get("metadata", {}), "imported_from": run_fmt}
            cases.append(case)
    return ImportedRuns(cases=cases, skipped=skipped)
