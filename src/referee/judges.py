"""LLM judges usable as evaluators in :func:`referee.evaluate` (and in suites): each receives the judge
settings from the run (``judge=``) and returns a typed result.

**Usage**::

    referee.evaluate(cases, [referee.judges.LLMJudge(rubric="- polite: the reply is polite")], judge="openai:gpt-4o-mini")
"""

from .evaluators.checks.judge import LLMJudge

__all__ = ["LLMJudge"]
