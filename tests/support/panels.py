"""A real three-judge panel run against the local fake server, for the report tests: the judges disagree on
some cases (so alpha, kappa and the split count are not trivial), one judge's model name and every rationale
are hostile Markdown/HTML."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from referee.testing import FakeLLMServer, WireRequest
from tests.support.cli import run_cli

HOSTILE_MODEL = "evil|<b>x</b>*_[l](http://e.x)"
HOSTILE_REASON = "<script>alert(1)</script> | *bold* [link](http://evil.example) @someone"
JUDGES = ["openai:gpt-judge-a", "openai:gpt-judge-b", f"openai:{HOSTILE_MODEL}"]  # two share a family
N_CASES = 8

# Per judge, its score on case i: gpt-judge-a passes the even cases, gpt-judge-b the first five, the hostile one
# everything but case 3. The judges then split on some cases and agree on others.
_SCORES: dict[str, Any] = {
    "gpt-judge-a": lambda i: 0.9 if i % 2 == 0 else 0.2,
    "gpt-judge-b": lambda i: 0.9 if i < 5 else 0.1,
    HOSTILE_MODEL: lambda i: 0.1 if i == 3 else 0.8,
}


def responder(req: WireRequest) -> str:
    """The judges' replies: each judge's score on the case whose output names its number."""
    m = re.search(r"answer number (\d+)", req.prompt_text)
    assert m is not None, req.prompt_text
    score = _SCORES[str(req.body.get("model"))](int(m.group(1)))
    return json.dumps({"correct": {"score": score, "rationale": HOSTILE_REASON}, "overall_score": score})


def panel_suite(tmp_path: Path, *, panel: bool = True) -> Path:
    """The suite file: judged by the three-judge panel, or (``panel=False``) by the run's one judge."""
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"id": f"c{i}", "input": "2+2?", "output": f"answer number {i}"}) + "\n"
                             for i in range(N_CASES)))
    p = tmp_path / "suite.yaml"
    data: dict[str, Any] = {"cases": "cases.jsonl", "evaluators": [{"llm_judge": {"rubric": "- correct"}}]}
    if panel:
        data.update(judges=JUDGES, panel={"rule": "majority"})
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p


def run_panel(srv: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
              *extra: str, panel: bool = True) -> tuple[int, Path]:
    """``referee run`` of the panel suite (``extra``: more flags; ``panel=False``: one judge, the hostile
    one, so its rationale is the rows'); (exit code, the results file)."""
    srv.responder = responder
    suite = panel_suite(tmp_path, panel=panel)
    one = [] if panel else ["--model", HOSTILE_MODEL]
    code, _, err = run_cli(["run", str(suite), "--provider", "openai", "--base-url", srv.openai_base_url, *one,
                            "--input-price-per-mtok", "1", "--output-price-per-mtok", "2", "--no-cache", *extra],
                           capsys)
    assert code in (0, 1), err
    return code, tmp_path / "suite_results.jsonl"


def human_labels(tmp_path: Path) -> tuple[Path, dict[str, float]]:
    """Human labels for six of the cases (some agree with the panel, some not): the file and the mapping."""
    labels = {"c0": 1.0, "c1": 0.0, "c2": 1.0, "c3": 0.0, "c4": 0.0, "c5": 1.0}
    p = tmp_path / "human.jsonl"
    p.write_text("".join(json.dumps({"id": k, "score": v}) + "\n" for k, v in labels.items()))
    return p, labels


def score_panels(results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                 *extra: str) -> list[dict[str, Any]]:
    """The panel figures ``referee score --json-out`` writes for ``results``."""
    out = tmp_path / "score.json"
    code, _, err = run_cli(["score", str(results), "--json-out", str(out), *extra], capsys)
    assert code == 0, err
    panels: list[dict[str, Any]] = json.loads(out.read_text())["panels"]
    return panels


def interval(d: dict[str, Any]) -> str:
    """An interval of the JSON as the reports write it (a share too: ``0.500 [0.167, 0.833]``, as
    ``referee score`` prints it)."""
    text = f"{d['estimate']:.3f} [{d['lo']:.3f}, {d['hi']:.3f}]"
    if d["hi"] - d["lo"] == 0:
        text += " (one-sided sample: zero-width CI)"
    return text
