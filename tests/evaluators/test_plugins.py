"""One creation path: ``evaluators.build`` takes every name a suite file takes (a built-in, a registered class,
a dotted path to a function, class or instance) and refuses the rest as a suite file does."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from referee.cases import Case
from referee.errors import UserError
from referee.evaluators import build


def test_build_takes_every_name_a_suite_file_takes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_checks.py").write_text(
        "from referee.evaluators import CheckResult, Evaluator\n"
        "def short(output, max_len=5):\n    return len(output) <= max_len\n"
        "class Upper(Evaluator):\n    name = 'upper_check'\n"
        "    def evaluate(self, case, output):\n        return CheckResult.from_bool(output.isupper())\n"
        "INSTANCE = Upper()\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    case = Case(id="c", data={"id": "c", "output": "ABC"})
    try:
        assert build("contains", {"value": "B"}).evaluate(case, "ABC").passed is True
        assert build("my_checks:short", {"max_len": 2}).evaluate(case, "ABC").passed is False
        assert build("my_checks:short").evaluate(case, "ABC").passed is True
        assert build("my_checks:Upper").evaluate(case, "ABC").passed is True
        assert build("my_checks:INSTANCE").evaluate(case, "abc").passed is False
        with pytest.raises(UserError, match="unknown option"):
            build("my_checks:short", {"maxlen": 2})
        with pytest.raises(UserError, match="takes no options"):
            build("my_checks:INSTANCE", {"x": 1})
        with pytest.raises(UserError, match=r"^suite\.yaml: unknown evaluator 'no_such_check' \(known: .*contains"):
            build("no_such_check", where="suite.yaml: ")
    finally:
        sys.modules.pop("my_checks", None)
