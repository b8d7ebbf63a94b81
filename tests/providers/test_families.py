"""A model's family from its name, for the panel's shared-family warning."""

from __future__ import annotations

import pytest

from referee.providers import model_family


@pytest.mark.parametrize(("name", "family"), [
    ("openai:gpt-4o-mini", "openai"), ("o1-mini-2024-09-12", "openai"), ("ChatGPT-0301", "openai"),
    ("anthropic:claude-3-5-haiku-latest", "anthropic"), ("gemini:gemini-2.0-flash", "google"),
    ("reward_model:Skywork_Skywork-Reward-Gemma-2-27B", "google"), ("PaLM2", "google"),
    ("reward_model:Skywork_Skywork-Reward-Llama-3.1-8B", "meta"), ("ollama:qwen2.5:7b", "qwen"),
    ("qwen2.5:7b", "qwen"), ("openai:meta-llama/Llama-3.1-8B-Instruct", "meta"),  # a vLLM server: the model decides
    ("mistral-large", "mistral"), ("deepseek-chat", "deepseek"), ("internlm2-20b-reward", "internlm"),
])
def test_known_families(name: str, family: str) -> None:
    assert model_family(name) == family


def test_an_unknown_name_is_not_guessed() -> None:
    assert model_family("standin:standin") is None
    assert model_family("openai:standin-a") is None  # the provider prefix says where, not whose
    assert model_family("my-finetune-v2") is None
    assert model_family("") is None
