"""Built-in checks, registered by name for suite files (see docs/suites.md for every option).

Text: ``equals``, ``contains``, ``not_contains``, ``regex``, ``starts_with``, ``ends_with``, ``length``.
Structure: ``is_json``, ``json_schema``, ``numeric``. Similarity: ``fuzzy``, ``token_f1``, ``rouge_l``,
``embedding`` (extra ``embeddings``). Code: ``python`` (sandboxed). Judge: ``llm_judge``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .._base import JudgeSettings
from ._common import OptionError

if TYPE_CHECKING:
    from ._code import PythonCode, extract_code
    from ._judge import LLMJudge
    from ._similarity import Embedding, Fuzzy, RougeL, TokenF1, embedding_available, rouge_l, token_f1
    from ._structured import IsJson, JsonSchema, Numeric
    from ._text import Contains, EndsWith, Equals, Length, NotContains, Regex, StartsWith

# Each check's module loads when its name is first asked for (a suite's ``llm_judge`` loads the judge alone).
_WHERE = {
    **dict.fromkeys(("Contains", "EndsWith", "Equals", "Length", "NotContains", "Regex", "StartsWith"), "_text"),
    **dict.fromkeys(("IsJson", "JsonSchema", "Numeric"), "_structured"),
    **dict.fromkeys(("Embedding", "Fuzzy", "RougeL", "TokenF1", "embedding_available", "rouge_l", "token_f1"),
                    "_similarity"),
    **dict.fromkeys(("PythonCode", "extract_code"), "_code"),
    "LLMJudge": "_judge",
}
_ORDER = ("Equals", "Contains", "NotContains", "Regex", "StartsWith", "EndsWith", "Length", "IsJson", "JsonSchema",
          "Numeric", "Fuzzy", "TokenF1", "RougeL", "Embedding", "PythonCode", "LLMJudge")


def __getattr__(name: str) -> Any:
    if name == "BUILTIN_CHECKS":
        return tuple(__getattr__(n) for n in _ORDER)
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{where}"), name)

__all__ = [
    "BUILTIN_CHECKS", "Contains", "Embedding", "EndsWith", "Equals", "Fuzzy", "IsJson", "JsonSchema",
    "JudgeSettings", "LLMJudge", "Length", "NotContains", "Numeric", "OptionError", "PythonCode", "Regex",
    "RougeL", "StartsWith", "TokenF1", "embedding_available", "extract_code", "rouge_l", "token_f1",
]
