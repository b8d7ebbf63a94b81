"""A scripted generator and critic for ``referee synth``, served by the local LLM server: it writes good cases
from the chunks it is given (each sentence of a chunk used once, in order) and plants the defects a test asks for
at given (batch, slot) places: an exact or near duplicate of the batch's previous case, a quote that is not in the
chunk, an input that holds its answer, a low critic score. Batches are numbered in the order their first request
arrives (run with concurrency 1 for a fixed order)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from referee.providers._standin_synth import _blocks, _sentences
from referee.testing._wire import WireRequest

DEFECTS = ("exact_duplicate", "near_duplicate", "unsupported", "leak", "low_critic", "answerable",
           "judged_answerable")
LOW = "(critic-low)"
JUDGED = "(judged-answerable)"


def question_of(sentence: str) -> str:
    words = sentence.rstrip(".").split()
    return "According to the documents, " + " ".join(words[: max(2, len(words) * 3 // 5)]) + " ... what?"


@dataclass
class ScriptedGenerator:
    defects: Mapping[tuple[int, int], str] = field(default_factory=dict)
    """(batch, slot) -> one of DEFECTS (both from 0)."""
    short: Mapping[int, int] = field(default_factory=dict)
    """batch -> how many cases its replies hold (fewer than asked)."""
    garbage: set[int] = field(default_factory=set)
    """Batches whose first reply is not JSON (the re-ask gets a good one)."""
    fail_after: int | None = None
    """Generation requests answered before the server answers 400 to every later one."""
    batches: list[str] = field(default_factory=list)
    generation_requests: int = 0
    critic_requests: int = 0
    answerable_requests: int = 0
    used: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _sentence(self, text: str) -> str:
        sents = [s for s in _sentences(text) if len(s.split()) >= 6]
        k = self.used.get(text, 0)
        self.used[text] = k + 1
        return sents[k % len(sents)]

    def _cases(self, batch: int, slots: str, chunks: Mapping[str, str]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for line in slots.splitlines():
            parts = [p.strip() for p in line.split("|")]
            n, kind = int(parts[0]), parts[1]
            labels = [x.strip() for x in parts[2].removeprefix("chunks:").split(",")]
            defect = self.defects.get((batch, n - 1))
            sents = [self._sentence(chunks[lb]) for lb in labels]
            if kind == "unanswerable":
                words = sents[0].rstrip(".").split()
                q = f"On the planet Neptune in 2999, would {' '.join(words[: len(words) * 3 // 5])} still hold?"
                if defect == "answerable":
                    q = sents[0].rstrip(".") + "?"
                elif defect == "judged_answerable":
                    q = f"{q} {JUDGED}"
                out.append({"slot": n, "input": q, "reference": "The documents do not answer this question.",
                            "quotes": []})
                continue
            ref = " ".join(sents)
            quotes = [{"chunk": lb, "quote": s} for lb, s in zip(labels, sents, strict=True)]
            q = " and ".join(question_of(s) for s in sents)
            if defect == "exact_duplicate" and out:
                q = out[-1]["input"].upper() + "!"
            elif defect == "near_duplicate" and out:
                q = out[-1]["input"].replace("According to", "Going by")
            elif defect == "unsupported":
                quotes = [{"chunk": labels[0], "quote": "Every purchase comes with a lifetime guarantee of 99 years."}]
            elif defect == "leak":
                q = f"Is it right that {ref.rstrip('.')}?"
            elif defect == "low_critic":
                q = f"{q} {LOW}"
            out.append({"slot": n, "input": q, "reference": ref, "quotes": quotes})
        return out

    def __call__(self, req: WireRequest) -> str | Any:
        from referee.testing._wire import Reply

        schema = req.schema or {}
        title = schema.get("title")
        prompt = req.prompt_text
        blocks = _blocks(prompt)
        chunks = {label: text for name, label, text in blocks if name == "chunk"}
        with self._lock:
            if title == "referee_synth_cases":
                self.generation_requests += 1
                if self.fail_after is not None and self.generation_requests > self.fail_after:
                    return Reply(status=400, body={"error": {"message": "scripted failure"}})
                reask = "could not be used" in prompt
                slots = next(t for n, _, t in blocks if n == "slots")
                if slots not in self.batches:
                    self.batches.append(slots)
                batch = self.batches.index(slots)
                if batch in self.garbage and not reask:
                    return "Sure! Here are some great test cases for you."
                cases = self._cases(batch, slots, chunks) if not reask or batch not in self._memo else \
                    self._memo[batch]
                self._memo[batch] = cases
                keep = self.short.get(batch)
                return json.dumps({"cases": cases[:keep] if keep is not None else cases})
            question = next((t for n, _, t in blocks if n == "question"), "")
            if title == "referee_synth_answerable":
                self.answerable_requests += 1
                words = set(re.findall(r"\w+", question.lower()))
                hit = JUDGED in question or any(len(words & set(re.findall(r"\w+", s.lower()))) >= 0.8 * len(words)
                                                for t in chunks.values() for s in _sentences(t))
                return json.dumps({"answerable": hit, "reason": "scripted"})
            self.critic_requests += 1
            score = 1 if LOW in question else 5
            return json.dumps({"score": score, "reason": "scripted critic"})

    _memo: dict[int, list[dict[str, Any]]] = field(default_factory=dict)


def judge_for(server: Any, **kw: Any) -> Any:
    """A generator over the real OpenAI-compatible HTTP client pointed at ``server``, one request at a time."""
    from referee import Judge

    kw.setdefault("cache", False)
    return Judge("openai:gpt-test", base_url=server.url + "/v1", concurrency=1, **kw)
