"""Which maker's model family a model name belongs to, so a panel can warn when its judges are not from
disjoint families (judges of one family share training data and biases, and their errors correlate)."""

from __future__ import annotations

import re

# Ordered: the first pattern found in the lower-cased name wins.
_FAMILIES: tuple[tuple[str, str], ...] = (
    (r"\bgpt|chatgpt|\bo[1345](?:-|\b)|davinci|openai", "openai"),
    (r"claude|anthropic", "anthropic"),
    (r"gemini|gemma|palm|bison|google", "google"),
    (r"llama|meta-", "meta"),
    (r"mistral|mixtral|ministral|codestral", "mistral"),
    (r"qwen|qwq", "qwen"),
    (r"deepseek", "deepseek"),
    (r"internlm", "internlm"),
    (r"falcon", "falcon"),
    (r"command|cohere|aya", "cohere"),
    (r"\bphi-?\d", "microsoft-phi"),
    (r"grok", "xai"),
    (r"yi-|\byi\b", "01-ai"),
    (r"glm", "zhipu"),
    (r"nemotron", "nvidia"),
)
_COMPILED = tuple((re.compile(p), f) for p, f in _FAMILIES)
_PROVIDERS = frozenset({"anthropic", "openai", "gemini", "azure", "bedrock", "vertex", "standin", "ollama", "vllm",
                        "lmstudio", "llamacpp", "fake"})
"""Provider names (``referee.providers``' built-ins): a prefix that says where a model is served, not whose."""


def model_family(model: str) -> str | None:
    """The family of ``model`` (``"openai"``, ``"anthropic"``, ``"google"``, ``"meta"``, ...), read from its name
    (a provider prefix such as ``openai:`` or ``ollama:`` is ignored); None when the name matches no known
    family (a fine-tune named otherwise cannot be placed, and is not guessed)."""
    name = model.strip().lower()
    head, sep, tail = name.partition(":")
    # ``provider:model`` (the CLI's spelling): only the model part decides (``openai:`` may be a vLLM server
    # serving Llama, or a stand-in); a name whose first part is no provider (``qwen2.5:7b``) is read whole.
    text = tail if sep and head in _PROVIDERS else name
    for pat, fam in _COMPILED:
        if pat.search(text):
            return fam
    return None
