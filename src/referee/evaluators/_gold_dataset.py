"""Gold-standard datasets on disk (``referee gold --dataset``): finding each case's generated artifact and gold
document, and the seed's ``results.json`` of a run.

Every case directory of the dataset holds ``input.yaml`` and the gold file; the generated artifact is looked up
under ``results-dir/<case>/`` with the criteria file's ``generated_file_patterns`` (then under ``results-dir``
itself, keeping matches whose path names the case). A case missing either is skipped with a message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._util._yaml import load as load_yaml
from ..errors import InputError
from ..results._manifest import utc_now_iso
from ..results._schema import ResultRow
from ..rubrics import Rubric
from ._evidence import ungrounded_counts
from ._gold import GoldCase


def _find_generated(results_dir: Path, case: str, patterns: list[str]) -> Path | None:
    for pat in patterns:
        hits = sorted(p for p in (results_dir / case).glob(pat) if p.is_file())
        if hits:
            return hits[0]
    for pat in patterns:
        hits = sorted(p for p in results_dir.glob(pat) if p.is_file() and case in p.relative_to(results_dir).parts)
        if hits:
            return hits[0]
    return None


def _undecodable(p: Path) -> bool:
    try:
        p.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def single_gold_case(generated: str, gold: str) -> GoldCase:
    """One gold case from a generated file and its gold document (``referee gold --generated --gold``)."""
    from ..rubrics._loader import read_text_file

    return GoldCase(id=Path(generated).stem, generated=read_text_file(generated, "generated file"),
                    gold=read_text_file(gold, "gold file"), generated_file=generated, gold_file=gold)


def discover_gold_cases(dataset: str, results_dir: str, rubric: Rubric,
                        criteria_path: str) -> tuple[list[GoldCase], list[str]]:
    """The dataset's cases with their generated and gold files, and a message per skipped case."""
    ds, rd = Path(dataset), Path(results_dir)
    if not ds.is_dir():
        raise InputError("dataset directory not found", file=dataset)
    if not rd.is_dir():
        raise InputError("results directory not found", file=results_dir)
    if not rubric.gold_standard_file:
        raise InputError("needed for --dataset (the gold file name in each case directory)", file=criteria_path,
                         field="gold_standard_file")
    if not rubric.generated_file_patterns:
        raise InputError("needed for --dataset (globs finding the generated artifact)", file=criteria_path,
                         field="generated_file_patterns")
    cases: list[GoldCase] = []
    skipped: list[str] = []
    for d in sorted(p for p in ds.iterdir() if p.is_dir()):
        inp = d / "input.yaml"
        gold = d / rubric.gold_standard_file
        if not inp.is_file():
            skipped.append(f"skipping {d.name}: no input.yaml in {d}")
            continue
        if not gold.is_file():
            skipped.append(f"skipping {d.name}: gold file {rubric.gold_standard_file} not found in {d}")
            continue
        gen = _find_generated(rd, d.name, rubric.generated_file_patterns)
        if gen is None:
            skipped.append(f"skipping {d.name}: no generated file matching {rubric.generated_file_patterns} "
                           f"under {rd / d.name}")
            continue
        try:
            meta = load_yaml(str(inp))  # file-and-line errors, as every YAML file of referee
        except InputError as exc:
            skipped.append(f"skipping {d.name}: {exc}")
            continue
        except OSError as exc:
            skipped.append(f"skipping {d.name}: {inp}: {exc.strerror or exc}")
            continue
        try:
            gen_text = gen.read_text(encoding="utf-8")
            gold_text = gold.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            bad = gen if _undecodable(gen) else gold
            skipped.append(f"skipping {d.name}: {bad}: not valid UTF-8 ({exc.reason})")
            continue
        except OSError as exc:
            skipped.append(f"skipping {d.name}: {exc.filename or d}: {exc.strerror or exc}")
            continue
        md: dict[str, Any] = {"input": meta} if meta is not None else {}
        if isinstance(meta, dict):
            for k in ("system_model", "system_under_test"):
                if meta.get(k):
                    md[k] = str(meta[k])
        cases.append(GoldCase(id=d.name, generated=gen_text, gold=gold_text, generated_file=str(gen),
                              gold_file=str(gold), metadata=md))
    return cases, skipped


def gold_results_json(rows: list[ResultRow], rubric: Rubric, criteria_path: str, judge: dict[str, Any],
                      skipped: list[str], warnings: list[str]) -> dict[str, Any]:
    """The seed's ``results.json`` of a gold run (per case: verdict, grade, criteria with quotes)."""
    by_id = {c.id: c for c in rubric.criteria}
    cases = []
    for r in rows:
        d = r.details
        cases.append({
            "case": r.id, "status": r.status, "verdict": d.get("verdict"), "verdict_reason": d.get("verdict_reason"),
            "grade": d.get("grade"),
            "total_score": d.get("total_score"), "max_score": d.get("max_score"), "score_pct": d.get("score_pct"),
            "criteria_passed": d.get("criteria_passed"), "criteria_total": d.get("criteria_total"),
            "critical_failures": d.get("critical_failures"), "generated_file": d.get("generated_file"),
            "gold_file": d.get("gold_file"), "flags": r.flags, "error": r.error,
            "pass_score_mismatch": d.get("pass_score_mismatch") or {},
            "criteria": [{
                "id": c.id, "name": c.name,
                "weight": "critical" if by_id.get(c.id) and by_id[c.id].critical else "important",
                "status": c.status, "pass": c.passed, "score": None if c.raw_score is None else int(c.raw_score),
                "reasoning": c.rationale, "quotes": c.evidence, "grounded": c.grounded, "error": c.error,
            } for c in r.criteria],
        })
    return {
        "skill": rubric.skill or rubric.name, "description": rubric.description, "criteria_file": criteria_path,
        "judge": judge, "pass_threshold": rubric.pass_threshold, "fail_on_critical": rubric.fail_on_critical,
        "generated_at": utc_now_iso(),
        "summary": {"cases": len(rows), "passed": sum(r.passed is True for r in rows),
                    "failed": sum(r.passed is False for r in rows),
                    "unscored": sum(r.status != "scored" and r.passed is None for r in rows),
                    "failed_with_unscored_criteria": sum(r.status != "scored" and r.passed is False for r in rows),
                    "skipped": len(skipped),
                    "ungrounded_per_criterion": ungrounded_counts(rows),
                    "self_grading": sum("self_grading" in r.flags for r in rows)},
        "skipped": skipped, "warnings": warnings, "cases": cases,
    }
