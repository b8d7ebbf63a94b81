"""Built-in checks, registered by name for suite files (see docs/suites.md for every option).

Text: ``equals``, ``contains``, ``not_contains``, ``regex``, ``starts_with``, ``ends_with``, ``length``.
Structure: ``is_json``, ``json_schema``, ``numeric``. Similarity: ``fuzzy``, ``token_f1``, ``rouge_l``,
``embedding`` (extra ``embeddings``). Code: ``python`` (sandboxed). Judge: ``llm_judge``.
"""

from __future__ import annotations

from .._base import JudgeSettings
from ._code import PythonCode, extract_code
from ._common import OptionError
from ._judge import LLMJudge
from ._similarity import Embedding, Fuzzy, RougeL, TokenF1, embedding_available, rouge_l, token_f1
from ._structured import IsJson, JsonSchema, Numeric
from ._text import Contains, EndsWith, Equals, Length, NotContains, Regex, StartsWith

BUILTIN_CHECKS = (Equals, Contains, NotContains, Regex, StartsWith, EndsWith, Length, IsJson, JsonSchema,
                  Numeric, Fuzzy, TokenF1, RougeL, Embedding, PythonCode, LLMJudge)

__all__ = [
    "BUILTIN_CHECKS", "Contains", "Embedding", "EndsWith", "Equals", "Fuzzy", "IsJson", "JsonSchema",
    "JudgeSettings", "LLMJudge", "Length", "NotContains", "Numeric", "OptionError", "PythonCode", "Regex",
    "RougeL", "StartsWith", "TokenF1", "embedding_available", "extract_code", "rouge_l", "token_f1",
]
