"""The secret masks' quick look: a text it passes is one the masks would leave as it is."""

from __future__ import annotations

import pytest

from referee._util._redact import may_hold_secrets, redact_text

SECRET = "a-key-value-from-the-environment"
TEXTS = [
    "Where is my refund for order 1234?",
    '[{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]',
    "my key is sk-abcdefghijklmnop1234", "AIzaSyA1234567890abcdefghijklmnopq", "gsk_abcdefghijklmnopqrst",
    "xai-abcdefghijklmnopqrst", "hf_abcdefghijklmnopqrst", "ghp_abcdefghijklmnopqrst", "github_pat_abcdefghijklmnop",
    "postgresql://user:pw@db:5432/x", "see https://a:b@host/path", "mail me at a@b.c", "https://host/p?q=1",
    "GET /v1?api_key=abc123&x=1", "https://h/x?token=zzz", "a=b&c=d", "x ? y = z", "sk-short",
    f"the value {SECRET} leaked", "no secret at all: sk_ not-a-key, hf-, AIz",
]


@pytest.mark.parametrize("text", TEXTS)
def test_a_text_the_quick_look_passes_is_left_as_it_is(text: str) -> None:
    values = [SECRET]
    assert may_hold_secrets(text, values) or redact_text(text, values=values) == text


def test_the_quick_look_passes_ordinary_text_and_stops_at_secrets() -> None:
    assert not may_hold_secrets(TEXTS[0], [SECRET]) and not may_hold_secrets(TEXTS[1], [SECRET])
    assert may_hold_secrets(TEXTS[2], []) and may_hold_secrets(f"x {SECRET} y", [SECRET])
    assert may_hold_secrets("https://a:b@host/", []) and may_hold_secrets("/x?api_key=1", [])
