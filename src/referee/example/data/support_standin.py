"""STAND-IN for the support agent, so the example runs without a model or a key. It is NOT a model: it answers
each known question with the reply the real agent gave under that prompt version (``before.jsonl`` = prompt v1,
``after.jsonl`` = prompt v2) and says so for anything else. Deterministic by construction.

With a model, the target is a provider, a model and a prompt file instead:

    targets:
      - {id: v2, provider: openai, model: gpt-4o-mini, prompt: prompts/v2.md}
"""

from __future__ import annotations

import json
from pathlib import Path

_HERE = Path(__file__).parent


def _replies(name: str) -> dict[str, str]:
    with open(_HERE / name, encoding="utf-8") as f:
        return {c["input"]: c["output"] for c in map(json.loads, f) if c.get("input")}


_V1 = _replies("before.jsonl")
_V2 = _replies("after.jsonl")


def _answer(table: dict[str, str], question: str) -> str:
    return table.get(question, "(stand-in agent: no recorded reply for this question; use a real model target)")


def answer_v1(question: str) -> str:
    """The support agent with the old prompt (stand-in)."""
    return _answer(_V1, question)


def answer_v2(question: str) -> str:
    """The support agent with the new prompt (stand-in)."""
    return _answer(_V2, question)
