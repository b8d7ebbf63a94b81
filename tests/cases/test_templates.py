"""Template filling exactly as the seed's judge runner does it, and the preflight."""

from __future__ import annotations

import json

from referee.cases._case import Case
from referee.cases._templates import fill, fill_case, placeholders, preflight, transcript


def _case(cid: str = "a", **data: object) -> Case:
    return Case(id=cid, data={"id": cid, **data}, source="cases.jsonl", line=1)


def test_case_value_with_placeholder_is_never_expanded_again() -> None:
    case = _case(input="please ignore {output} and {reference}", output="THE OUTPUT", reference="REF")
    text = fill_case("Q: {input}\nA: {output}", case)
    assert text == "Q: please ignore {output} and {reference}\nA: THE OUTPUT"


def test_braces_of_json_in_the_template_are_left_alone() -> None:
    tmpl = 'Reply {"overall_score": 0.5} for {input} {unknown}'
    assert fill(tmpl, {"input": "x"}) == 'Reply {"overall_score": 0.5} for x {unknown}'
    assert placeholders(tmpl) == ["input", "unknown"]


def test_non_strings_are_inserted_exactly_as_the_seeds_json_dumps_indent_2() -> None:
    value = {"a": [1, 2], "é": True, "none": None}
    assert fill("{x}", {"x": value}) == json.dumps(value, indent=2)
    assert '"\\u00e9": true' in fill("{x}", {"x": value})  # escaped as the seed's runner sent it
    assert fill("{n}", {"n": 3}) == "3"
    assert fill("{b}", {"b": False}) == "false"
    assert fill("{s}", {"s": "é"}) == "é"  # strings are inserted as they are


def test_output_falls_back_to_final_output_and_transcript_from_turns() -> None:
    case = _case(final_output="done", turns=[{"role": "user", "content": "hi"},
                                             {"role": "assistant", "content": "hello"}])
    assert fill_case("{output}", case) == "done"
    assert fill_case("{transcript}", case) == "User: hi\nAssistant: hello"
    assert transcript([{"role": "tool", "content": {"k": 1}}]) == 'Tool: {\n  "k": 1\n}'


def test_preflight_keeps_first_duplicate_and_reports_missing_fields() -> None:
    a1 = _case("a", input="first", output="o")
    a2 = Case(id="a", data={"id": "a", "input": "second", "output": "o"}, source="cases.jsonl", line=2)
    b = Case(id="b", data={"id": "b", "input": "no output"}, source="cases.jsonl", line=3)
    pf = preflight([a1, a2, b], ["input", "output"])
    assert [c.data["input"] for c in pf.valid] == ["first"]
    assert pf.skipped == 2 and not pf.ok
    assert any("duplicate id 'a'" in p and "cases.jsonl:2" in p for p in pf.problems)
    assert any("'b'" in p and "output" in p and "cases.jsonl:3" in p for p in pf.problems)


def test_preflight_accepts_fallback_fields() -> None:
    c = _case(input="q", final_output="x", turns=[{"role": "user", "content": "q"}])
    assert preflight([c], ["input", "output", "transcript"]).ok


def test_preflight_names_a_field_no_case_has_and_lists_the_fields_cases_do_have() -> None:
    a = _case("a", input="q", output="o")
    b = Case(id="b", data={"id": "b", "input": "q2", "reference": "r"}, source="cases.jsonl", line=2)
    pf = preflight([a, b], ["input", "ouptut"])  # a template typo
    assert pf.missing_everywhere == ["ouptut"]
    assert pf.case_fields == ["id", "input", "output", "reference"]  # in order of first appearance
    assert preflight([a, b], ["input", "output"]).missing_everywhere == []  # only b lacks it: a bad case
