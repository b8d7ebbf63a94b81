"""``python``: the output is Python code that must run, or pass given tests, inside the sandbox."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from ...cases._case import Case
from .._base import CheckResult, Evaluator, register
from .._sandbox import SandboxLimits, run_python
from ._common import OptionError, as_text

_FENCE_RE = re.compile(r"```(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


def extract_code(text: str) -> str:
    """The fenced Python blocks of a Markdown answer joined, or the whole text when there are none."""
    blocks = _FENCE_RE.findall(text)
    return "\n\n".join(b.strip("\n") for b in blocks) if blocks else text


@register
@dataclass
class PythonCode(Evaluator):
    """Run the output as Python in a sandbox (timeout, memory/CPU/process caps, no network, temp dir).

    Without tests the code must run without error. With ``tests`` (or ``tests_field``, a case field holding
    them) the tests run after the code in the same namespace: top-level asserts and/or ``test_*`` functions;
    the score is the share of test functions that pass. A hang, fork, unbounded allocation or socket is a
    failed result with the reason; a sandbox that cannot start is an ``error``.
    """

    name: ClassVar[str] = "python"
    blocking: ClassVar[bool] = True
    """Runs a subprocess: the suite runner calls it from a worker thread."""
    primary: ClassVar[str] = "tests"
    tests: str | None = None
    tests_field: str | None = None
    extract: bool = True
    """Take the code from Markdown ```python fences when the output has them."""
    timeout_s: float = 10.0
    cpu_s: int = 5
    memory_mb: int = 512
    max_processes: int = 0
    network: bool = False

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise OptionError("timeout_s", "must be > 0")
        if self.cpu_s < 1:
            raise OptionError("cpu_s", "must be >= 1")
        if self.memory_mb < 32:
            raise OptionError("memory_mb", "must be >= 32 (the interpreter itself needs ~20 MB)")
        if self.tests is not None:
            try:
                compile(self.tests, "tests", "exec")
            except SyntaxError as exc:
                raise OptionError("tests", f"tests are not valid Python: {exc.msg} (line {exc.lineno})") from None

    @property
    def limits(self) -> SandboxLimits:
        return SandboxLimits(timeout_s=self.timeout_s, cpu_s=self.cpu_s, memory_mb=self.memory_mb,
                             max_processes=self.max_processes, network=self.network)

    def evaluate(self, case: Case, output: Any) -> CheckResult:
        text = as_text(output)
        code = extract_code(text) if self.extract else text
        tests = self.tests
        if tests is None and self.tests_field:
            value = case.get(self.tests_field)
            if value is None:
                return CheckResult.error(f"case has no '{self.tests_field}' field (tests_field)")
            tests = as_text(value)
        try:
            compile(code, "solution.py", "exec")
        except SyntaxError as exc:
            return CheckResult(score=0.0, passed=False, reason=f"not valid Python: {exc.msg} (line {exc.lineno})")
        res = run_python(code, tests, self.limits)
        details = res.to_details()
        if res.status == "error":
            return CheckResult(score=None, passed=None, status="error", reason=res.reason, details=details)
        if res.tests_total:
            score = (res.tests_passed or 0) / res.tests_total
        else:
            score = 1.0 if res.status == "passed" else 0.0
        if res.status != "passed":
            score = min(score, 0.0 if res.status == "timeout" or res.forbidden else score)
        return CheckResult(score=score, passed=res.status == "passed", reason=res.reason, details=details)
