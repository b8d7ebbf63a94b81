"""The hot path's JSON (orjson where it gives json's exact result): the same values and errors as ``json``."""

from __future__ import annotations

import json
import math

import pytest

from referee._util import _fastjson

TEXTS = [
    '{"overall_score": 0.8, "quality": {"score": 0.8, "rationale": "clear"}}',
    '{"a": 1, "a": 2}',  # duplicate keys: the last wins in both
    "  [1, -0, 1.5e-10, 1e308, true, null]  ",
    '"\\u00e9\\n"',
    '{"big": 123456789012345678901234567890}',  # beyond 64 bits: orjson would give a float
    '{"n": 18446744073709551616}',
    '{"n": -9223372036854775809}',
    '{"x": NaN, "y": Infinity}',  # not JSON, but json accepts them
    '{"s": "\\ud800"}',  # a lone surrogate escape: orjson refuses, json decodes
    "1e400",
]


def _document(text: str) -> object:
    return _fastjson.loads_document(text.encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize("load", [_fastjson.loads, _document], ids=["loads", "loads_document"])
@pytest.mark.parametrize("text", TEXTS)
def test_loads_gives_json_s_value(text: str, load: object) -> None:
    assert callable(load)
    got, want = load(text), json.loads(text)
    assert type(got) is type(want)
    if isinstance(want, float) and math.isinf(want):
        assert got == want
    else:
        assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)


@pytest.mark.parametrize("text", ['{"a": 1', "", "{'a': 1}", '{"a": 1,}', "[" * 5 + "]" * 4])
def test_loads_raises_json_s_error(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as want:
        json.loads(text)
    for load in (_fastjson.loads, _document):
        with pytest.raises(json.JSONDecodeError) as got:
            load(text)
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize("body", [b"\xef\xbb\xbf[1, 2]", "[1]".encode("utf-16"), b"[" * 100_000 + b"]" * 100_000],
                         ids=["a byte-order mark", "UTF-16", "nested past any parser's depth"])
def test_loads_document_reads_or_refuses_what_json_does(body: bytes) -> None:
    try:
        want: object = json.loads(body)
    except (ValueError, RecursionError) as exc:
        with pytest.raises(type(exc)):
            _fastjson.loads_document(body)
    else:
        assert _fastjson.loads_document(body) == want


@pytest.mark.parametrize("value", [
    {"model": "m", "messages": [{"role": "user", "content": "caf\u00e9 </output> \u202e"}], "max_tokens": 1024},
    {"n": 2**70, "f": 0.1, "neg": -5},  # beyond 64 bits: json writes it
    {"s": "lone \ud800 surrogate"},  # orjson refuses: json escapes it
])
def test_dumps_bytes_decodes_to_the_same_value(value: dict[str, object]) -> None:
    body = _fastjson.dumps_bytes(value)
    assert isinstance(body, bytes)
    assert json.loads(body) == value


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_dumps_bytes_writes_non_finite_floats_as_json_does(bad: float) -> None:
    # orjson would write null: a request with temperature NaN would silently lose its temperature
    value = {"model": "m", "temperature": 0.5, "nested": [{"x": bad}]}
    assert _fastjson.dumps_bytes(value) == json.dumps(value).encode()
