"""What loading a suite costs before the first call: only the evaluators it names are imported (a fresh
interpreter each, so nothing another test imported hides a regression), and names resolve as before."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from referee.errors import UserError

HEAVY = ("referee.judges", "referee.evaluators._trajectory", "referee.evaluators._gold", "jsonschema", "numpy")

PROBE = """
import json, sys
from referee.suites import load_suite
load_suite(sys.argv[1])
print(json.dumps(sorted(m for m in sys.argv[2:] if m in sys.modules)))
"""


def _suite(tmp_path: Path, evaluators: str) -> Path:
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": "q", "output": "a refund"}) + "\n",
                                          encoding="utf-8")
    p = tmp_path / "suite.yaml"
    p.write_text(f"cases: cases.jsonl\nevaluators:\n{evaluators}", encoding="utf-8")
    return p


def _imported(suite: Path) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, str(suite), *HEAVY], capture_output=True, text=True,
                          check=True)
    return list(json.loads(done.stdout))


def test_a_suite_of_checks_and_llm_judge_imports_no_other_judge(tmp_path: Path) -> None:
    suite = _suite(tmp_path, '  - contains: {value: refund}\n  - llm_judge: {rubric: "- quality: ok"}\n')
    assert _imported(suite) == []


def test_a_suite_of_llm_judge_loads_no_other_check_no_target_runner_and_no_row_models(tmp_path: Path) -> None:
    # What a monitor's suite loads before its first judge call: the other checks, the code that runs targets and
    # the row models (which load with the first row, while calls are in flight) stay unloaded.
    probe = ("referee.evaluators.checks._judge", "referee.evaluators.checks._text", "referee.evaluators.checks._code",
             "referee.evaluators.checks._similarity", "referee.evaluators.checks._structured",
             "referee.targets._kinds", "referee.targets._model", "referee.results._schema")
    suite = _suite(tmp_path, '  - llm_judge: {rubric: "- quality: ok"}\n')
    done = subprocess.run([sys.executable, "-c", PROBE, str(suite), *probe], capture_output=True, text=True,
                          check=True)
    assert json.loads(done.stdout) == ["referee.evaluators.checks._judge", "referee.targets._model"]


def test_a_suite_naming_a_later_evaluator_still_finds_it(tmp_path: Path) -> None:
    suite = _suite(tmp_path, "  - contains: {value: refund}\n  - tool_used: {tools: [lookup]}\n")
    assert "referee.evaluators._trajectory" in _imported(suite)  # imported because it was asked for


def test_unknown_names_list_every_built_in_and_resolve_finds_each_module() -> None:
    from referee.evaluators._base import lookup, registry
    from referee.evaluators._plugins import resolve

    for name in ("contains", "tool_used", "gold", "rubric", "pairwise"):
        assert lookup(name) is not None and resolve(name) is lookup(name)
    with pytest.raises(UserError) as exc:
        resolve("no_such_check")
    for name in ("contains", "tool_used", "gold", "rubric"):
        assert name in str(exc.value) and name in registry()


def test_option_descriptions_only_in_the_published_schema() -> None:
    from referee.evaluators._options import options_json_schema, options_model
    from referee.evaluators.checks import BUILTIN_CHECKS

    equals = next(c for c in BUILTIN_CHECKS if c.name == "equals")
    model = options_model(equals)
    assert model is not None and model.model_fields["value"].description is None  # validating needs none
    schema = options_json_schema(equals)
    assert schema["properties"]["value"]["description"].startswith("Expected value")
