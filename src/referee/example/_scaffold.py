"""``referee init``: a small suite that runs at once against the stand-in judge (no key), to start from.

The files are a handful of factual questions with recorded answers (right ones, a wrong one, an "I don't know"),
a judge prompt, and ``suite.yaml`` with programmatic checks, the LLM judge and a gate. The judge is the local
stand-in (``provider: standin``, not a model); :data:`SWITCH` says how to point it at a real provider.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import UserError

SWITCH = (
    "The judge in suite.yaml is the local STAND-IN (provider: standin): not a model, it scores by token overlap\n"
    "with each case's reference. To grade with a real model, set the judge in suite.yaml, for example\n"
    "  judge: {provider: anthropic, model: claude-3-5-haiku-latest}   and export ANTHROPIC_API_KEY=...\n"
    "  judge: {provider: openai, model: gpt-4o-mini}                  and export OPENAI_API_KEY=...\n"
    "  judge: {provider: ollama, model: llama3.1}                     (a local Ollama, no key)\n"
    "or keep it and pass --provider/--model/--base-url to referee run (flags and REFEREE_PROVIDER win)."
)

# Facts anyone can check; the recorded outputs include a wrong answer and an "I don't know" so that the
# checks and the judge have something to catch.
_CASES = [
    {"id": "capital-fr", "category": "geography", "input": "What is the capital of France?",
     "reference": "The capital of France is Paris.", "output": "Paris is the capital of France."},
    {"id": "capital-au", "category": "geography", "input": "What is the capital of Australia?",
     "reference": "The capital of Australia is Canberra.",
     "output": "The capital of Australia is Canberra, not Sydney."},
    {"id": "boiling", "category": "science", "input": "At what temperature does water boil at sea level?",
     "reference": "Water boils at 100 degrees Celsius (212 degrees Fahrenheit) at sea level.",
     "output": "At sea level water boils at 100 degrees Celsius, which is 212 degrees Fahrenheit."},
    {"id": "planets", "category": "science", "input": "How many planets are in the Solar System?",
     "reference": "The Solar System has eight planets.", "output": "There are eight planets in the Solar System."},
    {"id": "moon-landing", "category": "history", "input": "In which year did humans first land on the Moon?",
     "reference": "Humans first landed on the Moon in 1969, with Apollo 11.",
     "output": "The first crewed Moon landing was Apollo 11, in 1972."},
    {"id": "everest", "category": "geography", "input": "What is the highest mountain above sea level?",
     "reference": "Mount Everest is the highest mountain above sea level.", "output": "I don't know."},
]

_PROMPT = """\
You are grading an answer to a question against a reference answer.

<question>
{input}
</question>

<reference>
{reference}
</reference>

<answer>
{output}
</answer>

Score each criterion from 0.0 (fails) to 1.0 (fully meets), with a one-sentence rationale:
- correctness: the answer agrees with the reference and invents nothing.
- completeness: the answer gives everything the question asks for.

Reply with JSON only:
{"correctness": {"score": 0.0, "rationale": "..."}, "completeness": {"score": 0.0, "rationale": "..."}, "overall_score": 0.0}
"""

_SUITE = """\
# A starting suite made by `referee init`. Run:  referee run {dir}/suite.yaml
# The judge below is the local STAND-IN (not a model: token overlap with the reference); see the end of the file
# for a real one. Each case is scored by the weighted mean of the evaluators; the gate fails the run when fewer
# than 60% of the cases pass.
name: starter
cases: cases.jsonl
evaluators:
  - id: overlap                 # shares the reference's words (token F1)
    token_f1: {{threshold: 0.3}}
  - id: no_dont_know            # an "I don't know" fails the case
    not_contains: {{value: ["i don't know", "i do not know"], ignore_case: true}}
    critical: true
  - length: {{min: 2, max: 400}}
  - id: judge
    llm_judge: {{template_file: judge_prompt.md, criteria: [correctness, completeness]}}
    weight: 2
scoring:
  mode: weighted_mean
  threshold: 0.7
gates:
  fail_under: 0.6
judge:
  provider: standin             # a real judge: provider: anthropic (or openai, gemini, ollama) and model: ...
"""

FILES = ("cases.jsonl", "judge_prompt.md", "suite.yaml")


def scaffold(target: str | Path, *, force: bool = False) -> list[Path]:
    """Write the starter suite's files into ``target`` (created if needed); refuses to overwrite one unless
    ``force``. Returns the files written."""
    root = Path(target)
    if root.exists() and not root.is_dir():
        raise UserError(f"{root}: exists and is not a folder")
    paths = [root / name for name in FILES]
    existing = [str(p) for p in paths if p.exists()]
    if existing and not force:
        raise UserError(f"{', '.join(existing)}: already exist(s); pick another folder or pass --force to overwrite")
    root.mkdir(parents=True, exist_ok=True)
    texts = {
        "cases.jsonl": "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in _CASES),
        "judge_prompt.md": _PROMPT,
        "suite.yaml": _SUITE.format(dir=root.as_posix()),
    }
    for p in paths:
        p.write_text(texts[p.name], encoding="utf-8")
    return paths
