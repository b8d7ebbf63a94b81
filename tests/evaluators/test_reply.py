"""The judge-reply contract: fences, safe repairs, re-ask once, then unscored with the raw reply kept."""

from __future__ import annotations

import pytest

from referee.errors import ProviderAuthError, ProviderError
from referee.evaluators._judge import parse_template_reply
from referee.evaluators._reply import EXCERPT_CHARS, ReplyInvalid, ask_judge, parse_json_object, strip_fence
from referee.providers import FakeProvider, JudgeRequest, Message
from referee.runner import JudgeClient
from tests.support.judging import verdict

REQ = JudgeRequest(messages=(Message("user", "grade"),))


def test_strip_fence_and_parse() -> None:
    assert strip_fence('```json\n{"a": 1}\n```') == '{"a": 1}'
    assert parse_json_object('```\n{"a": 1}\n```') == {"a": 1}
    assert parse_json_object('Sure! Here it is: {"a": {"b": "}"}} hope that helps') == {"a": {"b": "}"}}
    assert parse_json_object('{"a": [1, 2,], }') == {"a": [1, 2]}


@pytest.mark.parametrize(("text", "why"), [
    ("", "empty"),
    ("I think it is good", "not valid JSON"),
    ('{"overall_score": 0.', "cut off"),
    ("[1, 2]", "expected a JSON object"),
])
def test_unusable_replies(text: str, why: str) -> None:
    with pytest.raises(ReplyInvalid, match=why):
        parse_json_object(text)


def test_template_reply_validation() -> None:
    v = parse_template_reply('{"a": {"score": 0.9, "rationale": "good"}, "b": {"score": "0.2", "rationale": "weak"},'
                             ' "overall_score": 0.55}')
    assert v.overall == 0.55 and v.lowest_rationale == "weak"
    with pytest.raises(ReplyInvalid, match="overall_score' is missing"):
        parse_template_reply('{"a": {"score": 0.9, "rationale": "x"}}')
    with pytest.raises(ReplyInvalid, match="outside 0-1"):
        parse_template_reply('{"overall_score": 7}')
    with pytest.raises(ReplyInvalid, match="a.score 1.5 is outside"):
        parse_template_reply('{"a": {"score": 1.5}, "overall_score": 1}')
    with pytest.raises(ReplyInvalid, match="boolean"):
        parse_template_reply('{"overall_score": true}')
    with pytest.raises(ReplyInvalid, match="missing from the reply: b"):
        parse_template_reply('{"a": {"score": 1}, "overall_score": 1}', expected=["a", "b"])


async def test_reask_once_then_scored() -> None:
    fake = FakeProvider(["not json at all", verdict(0.4)])
    client = JudgeClient(fake, input_price_per_mtok=1.0, output_price_per_mtok=2.0)
    out = await ask_judge(client, REQ, parse_template_reply)
    assert out.status == "scored" and out.value is not None and out.value.overall == 0.4
    assert len(fake.requests) == 2
    reask = fake.requests[1].messages
    assert reask[-2].role == "assistant" and reask[-2].content == "not json at all"
    assert "could not be used" in reask[-1].content
    assert out.usage.calls == 2 and out.usage.input_tokens == 20
    assert out.cost_usd == pytest.approx(2 * (10 / 1e6 * 1.0 + 5 / 1e6 * 2.0))


async def test_still_invalid_after_reask_is_unscored_with_excerpt() -> None:
    long_garbage = '{"overall_score": 3}' + "x" * 2000
    fake = FakeProvider(['{"overall_score": 3}', long_garbage])
    out = await ask_judge(JudgeClient(fake), REQ, parse_template_reply)
    assert out.status == "unscored" and out.value is None
    assert len(fake.requests) == 2  # exactly one re-ask
    assert out.raw_excerpt is not None and out.raw_excerpt.startswith('{"overall_score": 3}')
    assert len(out.raw_excerpt) < EXCERPT_CHARS + 40 and "more chars" in out.raw_excerpt
    assert out.error is not None and "invalid judge reply" in out.error


async def test_provider_error_is_error_and_fatal_ones_propagate() -> None:
    out = await ask_judge(JudgeClient(FakeProvider([ProviderError("HTTP 400: bad", status=400)])), REQ,
                          parse_template_reply)
    assert out.status == "error" and out.error is not None and "400" in out.error
    with pytest.raises(ProviderAuthError):
        await ask_judge(JudgeClient(FakeProvider([ProviderAuthError("bad key", status=401)])), REQ,
                        parse_template_reply)
    with pytest.raises(ProviderError):
        await ask_judge(JudgeClient(FakeProvider([ProviderError("HTTP 404: no such model", status=404)])), REQ,
                        parse_template_reply)


def test_cost_has_no_float_noise() -> None:
    client = JudgeClient(FakeProvider(), input_price_per_mtok=3.0, output_price_per_mtok=15.0)
    assert client.cost(120, 40) == 0.00096
    assert JudgeClient(FakeProvider(), input_price_per_mtok=3.0).cost(120, 40) is None
    assert client.cost(None, 40) is None
