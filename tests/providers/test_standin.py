"""The stand-in judge never invents a verdict it cannot know: correctness asked with no reference is unscored,
with the reason, in process and over the wire; what it can know (a reference, a refusal) it still grades."""

from __future__ import annotations

import json
import urllib.request

import pytest

import referee
from referee.providers._standin import NO_REFERENCE, needs_reference
from referee.testing import FakeLLMServer, standin_judge

PARIS = {"id": "fr", "input": "What is the capital of France?", "output": "Paris is the capital of France."}


def test_correctness_without_a_reference_is_unscored_with_the_reason() -> None:
    result = referee.evaluate([PARIS], [referee.judges.LLMJudge(rubric="- correct")], judge="standin",
                              progress=False)
    row = result.rows[0]
    assert row.status == "unscored" and row.score is None and row.passed is None
    assert row.error == NO_REFERENCE and "reference" in row.error
    assert result.summary.overall.cases == 0 and result.summary.overall.unscored == 1 and not result.passed  # nothing graded is never a pass


def test_with_a_reference_it_grades_and_a_refusal_needs_none() -> None:
    rows = referee.evaluate([{**PARIS, "reference": "The capital of France is Paris."},
                             {"id": "idk", "input": "What is the capital of France?", "output": "I don't know."}],
                            [referee.judges.LLMJudge(rubric="- correct")], judge="standin", progress=False).rows
    assert rows[0].status == "scored" and rows[0].passed is True
    assert rows[1].status == "scored" and rows[1].score == 0.0  # a refusal is known to be wrong


@pytest.mark.parametrize(("rubric", "needs"), [("- correct", True), ("- the answer is factually accurate", True),
                                                ("- polite and concise", False), ("- formatted as a list", False)])
def test_only_instructions_about_correctness_need_a_reference(rubric: str, needs: bool) -> None:
    prompt = f"Grade it.\n<answer-0123456789ab>\nThis is correct and true.\n</answer-0123456789ab>\n{rubric}"
    assert needs_reference(prompt) is needs  # the case text's own "correct" is data, not the rubric


PAIR_TEMPLATE = """Which response is correct?
<question>
{input}
</question>
<response_1>
{response_1}
</response_1>
<response_2>
{response_2}
</response_2>
Reply with JSON only: {"winner": "response_1" or "response_2" or "tie", "rationale": "..."}"""


def test_the_pairwise_stand_in_without_a_reference_is_unscored_too() -> None:
    pairs = [{"id": "p", "input": "What is the capital of France?", "output_a": "Paris.",
              "output_b": "Lyon is the capital of France."}]
    rows = referee.evaluate(pairs, [referee.judges.Pairwise(template=PAIR_TEMPLATE)], judge="standin",
                            progress=False).rows
    assert rows[0].status == "unscored" and "no reference" in (rows[0].error or "")


def test_over_the_wire_the_reason_is_the_reply_and_no_number_is_read_from_it() -> None:
    with FakeLLMServer(responder=standin_judge) as srv:
        body = {"model": "standin", "messages": [{"role": "user", "content":
                "Is the answer correct? Reply with JSON only.\n<answer>\nParis.\n</answer>"}]}
        req = urllib.request.Request(srv.openai_base_url + "/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "Authorization": "Bearer x"})
        with urllib.request.urlopen(req, timeout=30) as r:
            text = json.loads(r.read())["choices"][0]["message"]["content"]
    assert text == NO_REFERENCE
