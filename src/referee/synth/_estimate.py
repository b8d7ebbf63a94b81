"""``referee synth --dry-run``: what the first round would send and cost, with no call made.

Generation: the first round's requests are built exactly as the run builds them, so the ones already in the
response cache are counted as free; each reply is priced at :data:`OUT_TOKENS_PER_CASE` tokens a case. Gating:
one critic call per candidate and one answerability call per unanswerable candidate (each its prompt's length,
:data:`GATE_OUT_TOKENS` out). Tokens are counted as characters / 4. More rounds, when gates reject, cost up to the
same again each (at most ``max_rounds``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..providers._base import Provider
from ..run._judge import Judge, as_judge
from ..runner._cache import cache_key
from ._documents import Redactor, Splitter
from ._generate import generation_request
from ._plan import BATCH_SIZE, DEFAULT_KINDS, KINDS, plan_slots, proportions
from ._run import GEN_MAX_TOKENS, MAX_ROUNDS, DocumentsArg, source_corpus

OUT_TOKENS_PER_CASE = 150
GATE_OUT_TOKENS = 60
GATE_PROMPT_CHARS = 900


@dataclass(frozen=True)
class SynthEstimate:
    """What the first round of a generation run would send and cost (``referee synth --dry-run``)."""

    requests: int
    cached: int
    input_tokens: int
    output_tokens: int
    gate_calls: int
    cost_usd: float | None
    """The first round's cost at the model's prices (None: no known price, e.g. a local server)."""
    max_rounds: int
    chunks: int

    def lines(self) -> list[str]:
        cost = "no known price for this model" if self.cost_usd is None else f"${self.cost_usd:.4f}"
        return [f"dry run: {self.chunks} chunks; round 1 sends {self.requests - self.cached} generation requests "
                f"({self.cached} of {self.requests} already in the cache) and about {self.gate_calls} gate calls",
                f"  about {self.input_tokens:,} input and {self.output_tokens:,} output tokens: {cost}",
                f"  each further round (at most {self.max_rounds - 1} more) costs up to as much again"]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def estimate_synth(documents: DocumentsArg | None = None, *, n: int = 20,
                   judge: Judge | str | Provider | None = None, kinds: Any = None, personas: Any = None,
                   splitter: Splitter | None = None, seed: int = 0, temperature: float | None = 0.7,
                   max_rounds: int = MAX_ROUNDS, redact: Redactor | None = None,
                   from_cases: Any = None, from_traces: Any = None) -> SynthEstimate:
    """Price the first round of :func:`referee.synth.synth` with the same arguments, sending nothing."""
    from ..errors import UserError

    corpus, _ = source_corpus(documents, from_cases, redact, from_traces)
    chunks = (splitter or Splitter()).split_all(corpus.documents)
    if not chunks:
        raise UserError("no text to generate cases from")
    kind_shares = proportions(kinds if kinds is not None else DEFAULT_KINDS, KINDS, "kinds")
    persona_shares = proportions(personas, None, "personas") if personas else {}
    j = as_judge(judge)
    client = j.client()
    try:
        batches = math.ceil(n / BATCH_SIZE)
        ins = outs = cached = 0
        ident = client.provider.describe()
        for b in range(batches):
            slots = plan_slots(b * BATCH_SIZE, (b + 1) * BATCH_SIZE, seed=seed, kinds=kind_shares,
                               personas=persona_shares, chunks=chunks)
            req, _ = generation_request(b, slots, temperature=temperature, seed=seed, max_tokens=GEN_MAX_TOKENS)
            if client.cache is not None and client.cache.get(cache_key(ident, req)) is not None:
                cached += 1
                continue
            ins += sum(len(m.content) for m in req.messages) // 4
            outs += OUT_TOKENS_PER_CASE * len(slots)
        cands = batches * BATCH_SIZE
        avg_chunk = sum(len(c.text) for c in chunks) // len(chunks)
        unans = round(cands * kind_shares.get("unanswerable", 0.0))
        gate_calls = cands + unans
        ins += cands * (GATE_PROMPT_CHARS + 2 * avg_chunk) // 4 + unans * (GATE_PROMPT_CHARS + 4 * avg_chunk) // 4
        outs += gate_calls * GATE_OUT_TOKENS
        cost = client.cost(ins, outs) if ins or outs else 0.0
    finally:
        if client.cache is not None:
            client.cache.close()
    return SynthEstimate(batches, cached, ins, outs, gate_calls, cost, max_rounds, len(chunks))
